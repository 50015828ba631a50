"""Applying an answer: entity heuristics, pending facts, facts, lifecycle, skills, notes, tacit.

Each test files answers through real parts, as one heartbeat does: a `UnitOfWork` over a store
made by `memoryd init`'s code, the `PendingOverlay` over a real state database, and that
database's mention index as the mention counter. Later chunks see what earlier ones filed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from structlog.testing import capture_logs
from tests.support.extractors import (
    LOG_FILE,
    START,
    answer,
    fact,
    make_chunk,
    make_store,
    open_session,
    person,
    store_files,
)

from memoryd.extractors.apply import ApplyCounters, StoreSession, apply_answer
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.contract import RecordMemories
from memoryd.extractors.pending import PendingOverlay, write_pending_changes
from memoryd.gitrepo import GitStore
from memoryd.state import State
from memoryd.worktree import UnitOfWork

JANE = "life/areas/people/jane-doe"
BOB = "life/areas/people/bob-stone"
ACME = "life/areas/companies/acme"
LAUNCH = "life/projects/launch"
LAUNCH_ARCHIVED = "life/archives/projects/launch"
NOTE = "memory/2026-03-02.md"  # the daily note of START's day


@dataclass
class Filing:
    """The apply side of one heartbeat over real parts."""

    git: GitStore
    state: State
    uow: UnitOfWork
    session: StoreSession
    pending: PendingOverlay
    min_mentions: int = 3

    @classmethod
    def open(cls, git: GitStore, state: State) -> Filing:
        uow = UnitOfWork(git)
        return cls(git, state, uow, open_session(uow), PendingOverlay(state.pending))

    def apply(self, result: RecordMemories, chunk: Chunk | None = None) -> ApplyCounters:
        return apply_answer(
            result,
            chunk or make_chunk(),
            self.session,
            pending=self.pending,
            mentions=self.state.mentions,
            min_mentions=self.min_mentions,
        )

    def read(self, relative: str) -> str:
        text = self.uow.read_text(relative)
        assert text is not None, f"{relative} does not exist"
        return text

    def facts(self, folder: str) -> list[dict[str, Any]]:
        self.session.facts.save_all()
        stored: list[dict[str, Any]] = json.loads(self.read(f"{folder}/items.json"))
        return stored

    def commit(self) -> Filing:
        """Commit as the heartbeat does (files, then pending changes); return the next one."""
        self.session.facts.save_all()
        self.uow.apply_and_commit("test: apply", {})
        write_pending_changes(self.state.pending, self.pending.staged_changes())
        return Filing.open(self.git, self.state)


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def filing(tmp_path: Path, store_root: Path) -> Iterator[Filing]:
    state = State.open(tmp_path / "state" / "state.db")
    yield Filing.open(make_store(store_root), state)
    state.close()


def on(day: date) -> Chunk:
    """A chunk of the conversation of `day`, at START's time of day."""
    return make_chunk(when=START.replace(year=day.year, month=day.month, day=day.day))


def mention(state: State, text: str, days: int) -> None:
    """Index `days` conversation-days whose text says `text`."""
    for n in range(days):
        state.mentions.append("ops", f"chat-{n}", date(2026, 2, 1) + timedelta(days=n), text)


def by_text(facts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["fact"]: item for item in facts}


# --- entity heuristics ----------------------------------------------------------------------


def test_a_relationship_entity_is_created_with_its_facts_dated_by_the_conversation(
    filing: Filing,
) -> None:
    counters = filing.apply(
        answer(
            entities=[person("Jane Doe", relationship=True)],
            facts=[
                fact(
                    "Jane Doe", "Joined Acme as CTO", category="milestone", timestamp="2025-03-15"
                ),
                fact("Jane Doe", "Prefers calls in the morning", category="preference"),
            ],
        )
    )

    assert (counters.entities_created, counters.facts_added) == (1, 2)
    stored = by_text(filing.facts(JANE))
    cto = stored["Joined Acme as CTO"]
    assert cto["id"] == "jane-doe-001"
    assert cto["timestamp"] == "2025-03-15"
    # Filing is its first use: the processing date (a backfilled fact starts hot, then decays).
    assert cto["lastAccessed"] == "2026-03-10"
    assert cto["recordedAt"] == "2026-03-10"
    assert cto["accessCount"] == 0
    assert cto["source"] == {"agent": "ops", "session": "s1", "file": LOG_FILE, "lines": [1, 1]}
    # Without a timestamp, a fact is dated by its conversation.
    assert stored["Prefers calls in the morning"]["timestamp"] == "2026-03-02"


def test_a_significant_entity_qualifies_without_any_mention(filing: Filing) -> None:
    counters = filing.apply(
        answer(
            entities=[{"name": "Launch", "kind": "project", "significant": True}],
            facts=[fact("Launch", "Targets March", kind="project")],
        )
    )

    assert counters.entities_created == 1
    assert [item["fact"] for item in filing.facts(LAUNCH)] == ["Targets March"]


def test_a_name_that_does_not_qualify_is_noted_and_kept_pending(filing: Filing) -> None:
    counters = filing.apply(answer(facts=[fact("Bob Stone", "Plays the cello")]))

    assert (counters.entities_created, counters.facts_added) == (0, 0)
    assert (counters.pending_added, counters.notes_added) == (1, 1)
    assert not filing.uow.exists(BOB)
    assert "- **Bob Stone** (person): Plays the cello" in filing.read(NOTE)
    [staged] = filing.pending.staged_changes()["add"]
    assert (staged["key"], staged["conversation_date"]) == ("bob stone", "2026-03-02")
    assert staged["fact"]["fact"] == "Plays the cello"
    assert filing.state.pending.all() == []  # written only with the heartbeat's commit


@pytest.mark.parametrize(("days", "created"), [(2, False), (3, True)])
def test_a_name_qualifies_once_mentioned_in_min_mentions_conversation_days(
    filing: Filing, days: int, created: bool
) -> None:
    mention(filing.state, "Lunch with Bob Stone today", days)

    counters = filing.apply(answer(facts=[fact("Bob Stone", "Plays the cello")]))

    assert counters.entities_created == int(created)
    assert filing.uow.exists(BOB) is created
    assert counters.pending_added == int(not created)


def test_mentions_of_an_alias_count_for_the_entity(filing: Filing) -> None:
    mention(filing.state, "Robert Stone called", 2)
    filing.state.mentions.append("ops", "other", date(2026, 2, 20), "Bobby says hi")

    counters = filing.apply(
        answer(
            entities=[person("Robert Stone", aliases=["Bobby"])],
            facts=[fact("Robert Stone", "Plays the cello")],
        )
    )

    assert counters.entities_created == 1
    assert json.loads(filing.read("life/areas/people/robert-stone/entity.json"))["aliases"] == [
        "Bobby"
    ]


def test_pending_facts_are_filed_with_their_own_dates_when_the_entity_qualifies(
    filing: Filing,
) -> None:
    filing.apply(answer(facts=[fact("Bob Stone", "Plays the cello")]), on(date(2026, 3, 2)))

    counters = filing.apply(
        answer(
            entities=[person("Bob Stone", relationship=True)],
            facts=[fact("Bob Stone", "Moved to Lyon")],
        ),
        on(date(2026, 3, 5)),
    )

    assert (counters.entities_created, counters.pending_filed, counters.facts_added) == (1, 1, 2)
    stored = by_text(filing.facts(BOB))
    assert stored["Plays the cello"]["timestamp"] == "2026-03-02"
    assert stored["Moved to Lyon"]["timestamp"] == "2026-03-05"
    assert stored["Plays the cello"]["lastAccessed"] == "2026-03-10"  # both filed that day
    assert stored["Moved to Lyon"]["lastAccessed"] == "2026-03-10"
    assert filing.pending.staged_changes() == {"add": [], "remove": []}


def test_pending_facts_of_an_earlier_heartbeat_are_filed_and_leave_the_database(
    filing: Filing,
) -> None:
    filing.apply(answer(facts=[fact("Bob Stone", "Plays the cello")]))
    later = filing.commit()
    [row] = later.state.pending.all()

    counters = later.apply(answer(entities=[person("Bob Stone", relationship=True)]))

    assert counters.pending_filed == 1
    assert later.pending.staged_changes()["remove"] == [row.id]
    assert [item["fact"] for item in later.facts(BOB)] == ["Plays the cello"]
    later.commit()
    assert later.state.pending.all() == []


def test_a_fact_pending_under_an_alias_joins_the_entity_that_has_the_alias(
    filing: Filing,
) -> None:
    filing.apply(answer(facts=[fact("Bobby", "Plays the cello")]))

    counters = filing.apply(
        answer(entities=[person("Robert Stone", aliases=["Bobby"], relationship=True)])
    )

    assert counters.pending_filed == 1
    facts = filing.facts("life/areas/people/robert-stone")
    assert [item["fact"] for item in facts] == ["Plays the cello"]


def test_pending_facts_of_another_kind_stay_pending(filing: Filing) -> None:
    filing.apply(answer(facts=[fact("Acme", "Is a nickname of Al", kind="person")]))

    counters = filing.apply(
        answer(entities=[{"name": "Acme", "kind": "company", "significant": True}])
    )

    assert counters.pending_filed == 0
    assert [a["kind"] for a in filing.pending.staged_changes()["add"]] == ["person"]
    assert filing.facts(ACME) == []


def test_the_same_pending_fact_is_staged_and_noted_once(filing: Filing) -> None:
    result = answer(facts=[fact("Bob Stone", "Plays the cello")])
    filing.apply(result)

    again = filing.apply(answer(facts=[fact("Bob Stone", "plays the cello.")]))

    assert (again.pending_added, again.notes_added) == (0, 0)
    assert len(filing.pending.staged_changes()["add"]) == 1
    assert filing.read(NOTE).lower().count("plays the cello") == 1


# --- facts: dedup, supersession, related entities, accesses ---------------------------------


def test_a_later_fact_supersedes_an_earlier_fact_of_the_same_entity(filing: Filing) -> None:
    jane = [person("Jane Doe", relationship=True)]
    filing.apply(answer(entities=jane, facts=[fact("Jane Doe", "Lives in Paris")]))

    counters = filing.apply(
        answer(facts=[fact("Jane Doe", "Lives in Berlin", supersedes=["jane-doe-001"])]),
        on(date(2026, 3, 4)),
    )

    assert (counters.facts_added, counters.facts_superseded) == (1, 1)
    stored = by_text(filing.facts(JANE))
    assert stored["Lives in Paris"]["status"] == "superseded"
    assert stored["Lives in Paris"]["supersededBy"] == stored["Lives in Berlin"]["id"]
    assert stored["Lives in Berlin"]["status"] == "active"


def test_supersession_never_touches_another_entitys_facts(filing: Filing) -> None:
    filing.apply(
        answer(
            entities=[
                person("Jane Doe", relationship=True),
                {"name": "Acme", "kind": "company", "significant": True},
            ],
            facts=[fact("Acme", "Based in Paris", kind="company")],
        )
    )

    counters = filing.apply(
        answer(facts=[fact("Jane Doe", "Based in Berlin", supersedes=["acme-001", "jane-doe-042"])])
    )

    assert (counters.facts_added, counters.facts_superseded) == (1, 0)
    assert counters.ignored_references == 2
    [acme] = filing.facts(ACME)
    assert (acme["status"], acme["supersededBy"]) == ("active", None)


def test_the_same_fact_is_not_filed_twice(filing: Filing) -> None:
    jane = [person("Jane Doe", relationship=True)]
    filing.apply(answer(entities=jane, facts=[fact("Jane Doe", "Joined Acme as CTO")]))

    counters = filing.apply(answer(facts=[fact("Jane Doe", "joined  acme as CTO.")]))

    assert counters.facts_added == 0
    assert len(filing.facts(JANE)) == 1


def test_related_entities_are_recorded_as_refs_of_known_entities_only(filing: Filing) -> None:
    counters = filing.apply(
        answer(
            entities=[
                person("Jane Doe", relationship=True),
                {"name": "Acme", "kind": "company", "significant": True},
            ],
            facts=[
                fact(
                    "Jane Doe",
                    "Works at Acme with Globex",
                    related=[
                        {"name": "Acme", "kind": "company"},
                        {"name": "Globex", "kind": "company"},
                    ],
                )
            ],
        )
    )

    assert counters.facts_added == 1
    [stored] = filing.facts(JANE)
    assert stored["relatedEntities"] == ["companies/acme"]


def test_accessed_ids_bump_facts_by_the_conversations_own_date(filing: Filing) -> None:
    jane = [person("Jane Doe", relationship=True)]
    filing.apply(answer(entities=jane, facts=[fact("Jane Doe", "Lives in Paris")]))

    # Filed on 2026-03-10; conversations dated after it (a skewed clock) and before it.
    counters = filing.apply(answer(accessed=["jane-doe-001", "nobody-001"]), on(date(2026, 3, 12)))
    older = filing.apply(answer(accessed=["jane-doe-001"]), on(date(2026, 3, 6)))

    assert (counters.accesses, counters.ignored_references) == (1, 1)
    assert older.accesses == 1
    [stored] = filing.facts(JANE)
    assert stored["accessCount"] == 2
    assert stored["lastAccessed"] == "2026-03-12"  # an older conversation never moves it back


def test_an_id_repeated_in_one_answer_is_one_access(filing: Filing) -> None:
    jane = [person("Jane Doe", relationship=True)]
    filing.apply(answer(entities=jane, facts=[fact("Jane Doe", "Lives in Paris")]))

    counters = filing.apply(answer(accessed=["jane-doe-001"] * 50), on(date(2026, 3, 6)))

    assert counters.accesses == 1
    [stored] = filing.facts(JANE)
    assert stored["accessCount"] == 1


def test_aliases_reported_for_a_known_entity_are_kept_and_resolve_later_facts(
    filing: Filing,
) -> None:
    filing.apply(answer(entities=[person("Jane Doe", relationship=True)]))

    filing.apply(answer(entities=[person("Jane Doe", aliases=["JD"])]))
    counters = filing.apply(answer(facts=[fact("JD", "Runs the Lisbon office")]))

    assert json.loads(filing.read(f"{JANE}/entity.json"))["aliases"] == ["JD"]
    assert (counters.entities_created, counters.facts_added) == (0, 1)
    assert [item["fact"] for item in filing.facts(JANE)] == ["Runs the Lisbon office"]


# --- lifecycle ------------------------------------------------------------------------------


def test_a_completed_entity_moves_to_the_archives_with_its_facts_and_back(
    filing: Filing, store_root: Path
) -> None:
    launch = {"name": "Launch", "kind": "project", "significant": True}
    filing.apply(answer(entities=[launch], facts=[fact("Launch", "Targets March", kind="project")]))

    archived = filing.apply(
        answer(
            entities=[{**launch, "status": "completed"}],
            facts=[fact("Launch", "Shipped on time", kind="project")],
        )
    )

    assert archived.entities_archived == 1
    assert not filing.uow.exists(LAUNCH)
    assert json.loads(filing.read(f"{LAUNCH_ARCHIVED}/entity.json"))["status"] == "completed"
    assert len(filing.facts(LAUNCH_ARCHIVED)) == 2
    entity = filing.session.catalog.by_ref("projects/launch")
    assert entity is not None
    assert entity.archived

    reactivated = filing.apply(answer(entities=[{**launch, "status": "active"}]))

    assert reactivated.entities_reactivated == 1
    filing.commit()
    on_disk = store_files(store_root)
    assert f"{LAUNCH}/items.json" in on_disk
    assert not any(path.startswith(LAUNCH_ARCHIVED) for path in on_disk)
    assert len(json.loads(on_disk[f"{LAUNCH}/items.json"])) == 2


def test_a_new_entity_reported_completed_is_filed_straight_into_the_archives(
    filing: Filing,
) -> None:
    counters = filing.apply(
        answer(
            entities=[
                {"name": "Old Site", "kind": "project", "significant": True, "status": "completed"}
            ],
            facts=[fact("Old Site", "Ran on PHP", kind="project")],
        )
    )

    assert (counters.entities_created, counters.entities_archived) == (1, 1)
    assert not filing.uow.exists("life/projects/old-site")
    assert [f["fact"] for f in filing.facts("life/archives/projects/old-site")] == ["Ran on PHP"]


# --- skills, tacit, timeline ----------------------------------------------------------------


def test_tips_go_to_topic_files_and_routine_tips_to_the_routine_file(filing: Filing) -> None:
    counters = filing.apply(
        answer(
            skills=[
                {"topic": "fail2ban", "tip": "fail2ban-client needs sudo"},
                {"topic": "rsync", "tip": "Pass --delete-after for mirrors", "routine": True},
            ]
        ),
        make_chunk(routine="nightly-backup"),
    )

    assert counters.skills_added == 2
    assert "- fail2ban-client needs sudo" in filing.read("agents/ops/fail2ban.md")
    assert "(fail2ban.md)" in filing.read("agents/ops/skills-index.md")
    routine_file = filing.read("agents/ops/routines/nightly-backup-skills.md")
    assert "## rsync" in routine_file
    assert "- Pass --delete-after for mirrors" in routine_file
    assert not filing.uow.exists("agents/ops/rsync.md")


def test_a_routine_tip_from_a_source_without_a_routine_goes_to_the_topic_files(
    filing: Filing,
) -> None:
    counters = filing.apply(
        answer(skills=[{"topic": "rsync", "tip": "Pass --delete-after", "routine": True}]),
        make_chunk(routine=None),
    )

    assert counters.skills_added == 1
    assert "- Pass --delete-after" in filing.read("agents/ops/rsync.md")
    assert not filing.uow.exists("agents/ops/routines")


def test_tacit_lines_are_filed_once(filing: Filing) -> None:
    first = filing.apply(answer(tacit=["Prefers terse bullet summaries"]))
    again = filing.apply(answer(tacit=["prefers terse bullet summaries."]))

    assert (first.tacit_added, again.tacit_added) == (1, 0)
    assert filing.read("MEMORY.md").lower().count("prefers terse bullet summaries") == 1


def test_timeline_entries_take_their_time_or_the_chunks_local_start(filing: Filing) -> None:
    # 09:30:45 UTC is 10:30 in Paris; the seconds are dropped.
    chunk = make_chunk(when=START.replace(second=45), zone=ZoneInfo("Europe/Paris"))

    counters = filing.apply(
        answer(
            timeline=[
                {"time": "14:05", "text": "Moved the launch to March"},
                {"text": "Called the bank"},
            ]
        ),
        chunk,
    )

    assert counters.notes_added == 2
    lines = [line for line in filing.read(NOTE).splitlines() if line.startswith("- ")]
    assert lines == ["- 10:30 · ops · Called the bank", "- 14:05 · ops · Moved the launch to March"]


# --- what the store cannot take; what reaches the disk --------------------------------------


def test_an_empty_answer_changes_nothing(filing: Filing) -> None:
    counters = filing.apply(answer())

    assert counters == ApplyCounters()
    filing.session.facts.save_all()
    assert filing.uow.plan() == []


def test_items_the_store_cannot_take_are_skipped_and_counted_without_blocking_others(
    filing: Filing,
) -> None:
    with capture_logs() as logs:
        counters = filing.apply(
            answer(
                entities=[
                    {"name": "!!!", "kind": "person", "significant": True},
                    person("Jane Doe", relationship=True),
                ],
                facts=[fact("!!!", "Has no name"), fact("Jane Doe", "Likes tea")],
                skills=[{"topic": "???", "tip": "Use sudo"}, {"topic": "git", "tip": "Sign tags"}],
                tacit=["Prefers tea"],
            )
        )

    skipped = [entry for entry in logs if entry["event"] == "answer.item_skipped"]
    assert sorted(entry["item"] for entry in skipped) == ["entity", "fact", "skill"]
    assert all(entry["reason"] and entry["day"] == "2026-03-02" for entry in skipped)
    assert counters.items_skipped == 3
    assert (counters.facts_added, counters.skills_added, counters.tacit_added) == (1, 1, 1)
    assert [item["fact"] for item in filing.facts(JANE)] == ["Likes tea"]


def test_a_broken_items_file_skips_only_that_entitys_facts_and_is_left_alone(
    filing: Filing, store_root: Path
) -> None:
    filing.apply(
        answer(
            entities=[
                person("Jane Doe", relationship=True),
                {"name": "Acme", "kind": "company", "significant": True},
            ],
            facts=[fact("Jane Doe", "Likes tea"), fact("Acme", "Based in Paris", kind="company")],
        )
    )
    later = filing.commit()
    broken = b'[{"id": "jane-doe-001", '
    (store_root / JANE / "items.json").write_bytes(broken)

    counters = later.apply(
        answer(
            facts=[
                fact("Jane Doe", "Moved to Berlin"),
                fact("Acme", "Opened Lyon", kind="company"),
            ],
            accessed=["jane-doe-001", "acme-001"],
        )
    )
    later.commit()

    assert counters.items_skipped == 2  # Jane's fact and the access to her fact
    assert (counters.facts_added, counters.accesses) == (1, 1)
    assert (store_root / JANE / "items.json").read_bytes() == broken
    acme = json.loads((store_root / ACME / "items.json").read_text(encoding="utf-8"))
    assert [item["accessCount"] for item in acme] == [1, 0]


def test_nothing_reaches_the_disk_before_the_commit(filing: Filing, store_root: Path) -> None:
    before = store_files(store_root)

    filing.apply(
        answer(
            entities=[person("Jane Doe", relationship=True)],
            facts=[fact("Jane Doe", "Likes tea"), fact("Bob Stone", "Plays the cello")],
            timeline=[{"text": "Met Jane"}],
            skills=[{"topic": "git", "tip": "Sign tags"}],
            tacit=["Prefers tea"],
        )
    )
    filing.session.facts.save_all()

    assert store_files(store_root) == before
    filing.commit()
    after = store_files(store_root)
    assert {f"{JANE}/items.json", NOTE, "agents/ops/git.md"} <= set(after)
    assert after["MEMORY.md"] != before["MEMORY.md"]


@pytest.mark.parametrize("unreadable", [NOTE, "MEMORY.md"])
def test_an_unreadable_note_or_tacit_file_skips_only_its_items(
    filing: Filing, store_root: Path, unreadable: str
) -> None:
    (store_root / unreadable).parent.mkdir(parents=True, exist_ok=True)
    (store_root / unreadable).write_bytes(b"# Notes\n\n- caf\xe9 with Jane\n")

    counters = filing.apply(
        answer(
            entities=[person("Jane Doe", relationship=True)],
            facts=[fact("Jane Doe", "Likes tea")],
            timeline=[{"time": "10:00", "text": "Met Jane"}],
            skills=[{"topic": "git", "tip": "Sign tags"}],
            tacit=["Prefers tea"],
        )
    )

    assert counters.items_skipped == 1
    assert (counters.facts_added, counters.skills_added) == (1, 1)


def test_a_refused_lifecycle_move_still_files_the_entitys_facts(
    filing: Filing, store_root: Path
) -> None:
    launch = {"name": "Launch", "kind": "project", "significant": True}
    filing.apply(answer(entities=[launch]))
    later = filing.commit()
    copy = store_root / LAUNCH_ARCHIVED
    copy.mkdir(parents=True)
    (copy / "summary.md").write_text("# Launch\n\nA copy someone made by hand.\n", encoding="utf-8")

    counters = later.apply(
        answer(
            entities=[{**launch, "status": "completed"}],
            facts=[fact("Launch", "Shipped on time", kind="project")],
        )
    )

    assert counters.items_skipped == 1  # the move
    assert counters.facts_added == 1
    assert [item["fact"] for item in later.facts(LAUNCH)] == ["Shipped on time"]


def test_counters_add_up_every_field() -> None:
    total = ApplyCounters(facts_added=1)
    other = ApplyCounters(**{item.name: n + 1 for n, item in enumerate(fields(ApplyCounters))})

    total.add(other)

    for item in fields(ApplyCounters):
        expected = getattr(other, item.name) + (1 if item.name == "facts_added" else 0)
        assert getattr(total, item.name) == expected, item.name
