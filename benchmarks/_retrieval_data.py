"""The retrieval benchmark's own labelled data: what was said, the facts filed from it, and the
questions an agent would ask, each with the fact that answers it and a short answer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

from memoryd.store.vocabulary import EntityKind

TODAY: Final = date(2026, 3, 20)


@dataclass(frozen=True)
class Item:
    fact: str
    days_ago: int


@dataclass(frozen=True)
class Question:
    text: str
    fact: str  # the id of the fact that answers it
    turn: str  # the transcript turn the fact was filed from
    answer: str


def _on(days_ago: int) -> str:
    day = TODAY - timedelta(days=days_ago)
    return f"{day.day} {day.strftime('%B')} {day.year}"


# slug -> (name, kind, [(fact, days ago, the turn it came from, question, answer or None: the
# fact's date)])
_Row = tuple[str, int, str, str, str | None]
_RAW: Final[dict[str, tuple[str, EntityKind, list[_Row]]]] = {
    "alice-martin": (
        "Alice Martin",
        "person",
        [
            (
                "Alice plans to move to Lisbon in the autumn",
                11,
                "Alice: I'm planning on moving to Lisbon this autumn, finally.",
                "What are Alice's plans?",
                "Lisbon",
            ),
            (
                "Alice is learning Portuguese with a tutor twice a week",
                10,
                "Alice: my tutor and I do Portuguese lessons twice a week now",
                "Which language is Alice learning?",
                "Portuguese",
            ),
            (
                "Alice adopted a greyhound named Pixel",
                9,
                "Alice: we adopted a greyhound last weekend, his name is Pixel",
                "What is the name of Alice's dog?",
                "Pixel",
            ),
            (
                "Alice ran the Berlin half marathon in 1:52",
                8,
                "Alice: did the Berlin half marathon, finished in 1:52",
                "When did Alice run the half marathon?",
                None,
            ),
            (
                "Alice is allergic to peanuts",
                7,
                "Alice: careful with the snacks, I'm allergic to peanuts",
                "Does Alice have any allergies?",
                "peanuts",
            ),
            (
                "Alice's birthday is on the 3rd of July",
                2,
                "Alice: my birthday's the 3rd of July, don't forget",
                "When is Alice's birthday?",
                "3rd of July",
            ),
        ],
    ),
    "bob-chen": (
        "Bob Chen",
        "person",
        [
            (
                "Bob leads the payments team at Acme",
                11,
                "Bob: I lead the payments team these days",
                "Who leads the payments team?",
                "Bob",
            ),
            (
                "Bob prefers code reviews in the morning",
                9,
                "Bob: send me reviews before noon, mornings are when I review",
                "When does Bob like to review code?",
                "morning",
            ),
            (
                "Bob started a pottery class on Thursdays",
                6,
                "Bob: I signed up for pottery, it's every Thursday evening",
                "What hobby did Bob start?",
                "pottery",
            ),
            (
                "Bob's daughter Mia starts university in Edinburgh",
                4,
                "Bob: Mia got into Edinburgh, she starts university in September",
                "Where is Bob's daughter going to study?",
                "Edinburgh",
            ),
            (
                "Bob got promoted to engineering director",
                2,
                "Bob: news, I was promoted to engineering director",
                "When was Bob promoted?",
                None,
            ),
            (
                "Bob drives an electric Polestar 2",
                1,
                "Bob: charging the Polestar takes forever at the office",
                "What car does Bob drive?",
                "Polestar",
            ),
        ],
    ),
    "atlas-migration": (
        "Atlas migration",
        "project",
        [
            (
                "The Atlas migration moves billing from MySQL to Postgres",
                12,
                "ops: Atlas is the billing move off MySQL onto Postgres",
                "Which database is billing migrating to?",
                "Postgres",
            ),
            (
                "The Atlas migration cutover is scheduled for April 14",
                5,
                "ops: cutover for Atlas is set, April 14",
                "When is the Atlas cutover planned?",
                "April 14",
            ),
            (
                "The Atlas migration is blocked on the ledger schema review",
                3,
                "ops: Atlas is stuck waiting for the ledger schema review",
                "What is blocking the migration?",
                "ledger schema review",
            ),
            (
                "Atlas rollback plan is to keep MySQL writable for 48 hours",
                3,
                "ops: rollback plan, we keep MySQL writable for 48 hours after cutover",
                "How long will MySQL stay writable after the cutover?",
                "48 hours",
            ),
            (
                "Priya owns the Atlas data validation scripts",
                1,
                "ops: Priya owns the data validation scripts for Atlas",
                "Who is responsible for validating the migrated data?",
                "Priya",
            ),
        ],
    ),
    "acme": (
        "Acme",
        "company",
        [
            (
                "Acme's fiscal year ends in June",
                12,
                "Bob: remember our fiscal year closes end of June",
                "When does Acme's fiscal year end?",
                "June",
            ),
            (
                "Acme is opening an office in Toronto",
                8,
                "Bob: we're opening a Toronto office next quarter",
                "Where is Acme opening a new office?",
                "Toronto",
            ),
            (
                "Acme uses Grafana for dashboards and PagerDuty for alerts",
                6,
                "ops: dashboards live in Grafana, alerts page through PagerDuty",
                "What tool does Acme use for alerting?",
                "PagerDuty",
            ),
            (
                "Acme's on-call rotation changes every Monday",
                2,
                "ops: the on-call rotation hands over each Monday",
                "How often does on-call rotate?",
                "Monday",
            ),
        ],
    ),
    "priya-nair": (
        "Priya Nair",
        "person",
        [
            (
                "Priya is vegetarian",
                10,
                "Priya: no meat for me, I'm vegetarian",
                "What should we order for Priya for lunch?",
                "vegetarian",
            ),
            (
                "Priya is writing a book about distributed systems",
                7,
                "Priya: I'm writing a book on distributed systems, slowly",
                "What is Priya writing?",
                "distributed systems",
            ),
            (
                "Priya will be on parental leave from May to August",
                4,
                "Priya: heads up, parental leave from May through August",
                "When will Priya be away?",
                "August",
            ),
            (
                "Priya grew up in Kochi",
                1,
                "Priya: I grew up in Kochi, by the backwaters",
                "Where did Priya grow up?",
                "Kochi",
            ),
            (
                "Priya recommends the book Designing Data-Intensive Applications",
                6,
                "Priya: if you read one book, make it Designing Data-Intensive Applications",
                "Which book did Priya recommend?",
                "Designing Data-Intensive Applications",
            ),
        ],
    ),
    "garden-club": (
        "Garden club",
        "area",
        [
            (
                "The garden club meets on the first Saturday of each month",
                9,
                "Alice: garden club is the first Saturday of every month",
                "When does the garden club meet?",
                "first Saturday",
            ),
            (
                "The garden club is planting tomatoes and basil this spring",
                5,
                "Alice: this spring the club plants tomatoes and basil",
                "What is the garden club growing?",
                "tomatoes",
            ),
            (
                "Alice was elected treasurer of the garden club",
                3,
                "Alice: they elected me treasurer of the garden club, ha",
                "Who handles the garden club's money?",
                "Alice",
            ),
            (
                "The garden club's plot is behind the public library",
                2,
                "Alice: our plot is the one behind the public library",
                "Where is the garden club's plot?",
                "library",
            ),
        ],
    ),
}

# Turns no fact came from: small talk and work chatter, as real transcripts have.
_NOISE: Final = [
    (11, "ops", "What are the plans for today? Checking the deploy queue first."),
    (10, "Alice", "Morning! What are you working on?"),
    (9, "ops", "The build is green again after the flaky test fix."),
    (8, "Bob", "Where did we put the runbook for the payments service?"),
    (7, "ops", "Restarted the worker pool, memory looks fine now."),
    (6, "Alice", "When is the next team lunch? I'd like to plan around it."),
    (5, "ops", "Who is on call this week? The pager was quiet."),
    (4, "Bob", "Can someone review my pull request on the invoice exporter?"),
    (3, "ops", "Rotated the API keys for the staging environment."),
    (2, "Priya", "What time is the planning meeting tomorrow?"),
    (1, "ops", "Disk usage on the database host is at 71 percent."),
    (0, "Alice", "Thanks all, see you on Monday."),
]

ENTITIES: Final[dict[str, tuple[str, EntityKind, list[Item]]]] = {
    slug: (name, kind, [Item(fact, days) for fact, days, *_ in rows])
    for slug, (name, kind, rows) in _RAW.items()
}
QUESTIONS: Final = [
    Question(question, f"{slug}-{number:03d}", turn, answer or _on(days))
    for slug, (_, _, rows) in _RAW.items()
    for number, (_, days, turn, question, answer) in enumerate(rows, start=1)
]
# (days ago, hour, speaker, text)
TRANSCRIPT: Final = sorted(
    [
        (days, 9 + number % 8, turn.split(": ", 1)[0], turn.split(": ", 1)[1])
        for _, (_, _, rows) in _RAW.items()
        for number, (_, days, turn, _, _) in enumerate(rows)
    ]
    + [(days, 17, speaker, text) for days, speaker, text in _NOISE]
)
