"""`memoryd context`: the start-of-run bundle an agent loads (docs/cli.md, Reading the memory).

The bundle is Markdown, made of sections in this order, which is also their priority when the
token budget is short:

1. the tacit file (`store.tacit_file`): how the user works;
2. the agent's skills index, then its routine's file when `--routine` is given;
3. the summaries of the entities the agent deals with most (`agent_weight`): each active fact
   counts by its tier (hot 4, warm 2) and three times over when it came from this agent's own
   conversations, whose cold facts count 1 too, so an entity the agent worked on months ago
   still ranks; then by folder. At most `MAX_ENTITIES`, each entity's `summary.md` as it stands
   (the heartbeat keeps it current), or the template when it has none yet. The candidates come
   from the search index when the caller has it (its `CANDIDATES` hottest entities: fast on a
   large store) and only they are ranked for the agent; else, and when the index has no entity
   with a hot or warm fact at all (a store nobody used for weeks: the bundle would be empty and
   nothing would ever be used again), every entity's facts are read;
4. today's daily note, then yesterday's (dates in `schedule.timezone`).

Fitting, within the token budget and, for a hook format, a hard ceiling in the harness's own unit
(`memoryd.reading.formats`), whichever is tighter; a section is kept as whole leading lines (a
line over `LONG_LINE` characters is split after its sentences first). First every section in
turn takes lines up to its share of the limits (`SHARES`: a kind's fraction split among its
sections), so that each entity and today's note keep their first lines however long the tacit
file is; then, again in priority order, each takes what is left. The last line names the
sections cut or left out and how to get them (`memoryd search`, the MCP tools), and its room is
kept from the start, so the output never exceeds a limit. Tokens are
`memoryd.llm.base.estimate_tokens`, the estimate the heartbeat uses (about 4 ASCII characters a
token: a 4,000-token budget alone allows about 16,000 characters, more than a hook may print).

Nothing here calls a model, writes anything, or takes a lock: the same store on the same day
gives the same bytes. The facts whose ids the included summaries cite are returned as
`fact_ids`, so that the caller can queue them as read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Final

from memoryd.errors import CorruptFileError
from memoryd.llm.base import estimate_tokens
from memoryd.logs import get_logger
from memoryd.reading.accesses import QueuedReads
from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.formats import Ceiling
from memoryd.store.catalog import EntityCatalog, entity_at
from memoryd.store.entities import Entity
from memoryd.store.notes import note_path
from memoryd.store.skills import INDEX_FILE, ROUTINES_DIR, agent_folder
from memoryd.store.summaries import (
    SummaryInput,
    read_facts,
    read_input,
    render_template,
    summary_input,
)
from memoryd.store.tiers import TierRule, classify
from memoryd.worktree import slugify

log = get_logger(__name__)

DEFAULT_BUDGET: Final = 4000
MAX_ENTITIES: Final = 12
# How many of the search index's hottest entities are ranked for the agent.
CANDIDATES: Final = 3 * MAX_ENTITIES
LONG_LINE: Final = 300
# The fraction of the limits each kind of section may take before any takes more (the kind's
# fraction is shared by its sections), so that a long tacit file cannot crowd out the rest.
SHARES: Final[dict[str, float]] = {
    "tacit": 0.25,
    "skills": 0.12,
    "routine": 0.08,
    "entity": 0.35,
    "note": 0.20,
}
HOW_TO_GET: Final = "`memoryd search QUERY`, or the MCP tools `search`, `get_entity` and `context`"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_HEADING = re.compile(r"^#{1,5}\s")
_FACT_ID = re.compile(r"\[([a-z0-9]+(?:-[a-z0-9]+)*-[0-9]{3,}(?:\s*,\s*[a-z0-9-]+)*)\]")


@dataclass(frozen=True)
class Section:
    title: str
    path: str
    body: str
    kind: str  # tacit, skills, routine, entity, note


@dataclass
class Bundle:
    """The fitted bundle: its text, what it holds and what it left out."""

    text: str
    tokens: int
    included: list[str] = field(default_factory=list)  # section paths, whole or cut
    cut: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)  # facts cited by what is included
    chars: int = 0
    reads: QueuedReads = field(default_factory=lambda: QueuedReads(0, queued=True))


def gather_sections(
    store: ReadOnlyStore,
    *,
    agent: str,
    routine: str | None,
    today: date,
    rule: TierRule,
    tacit_file: str,
    skills_dir: str,
    max_entities: int = MAX_ENTITIES,
    hottest: Sequence[str] | None = None,
) -> list[Section]:
    """Every section the agent's bundle could hold, in priority order (module docstring).
    `hottest` are the folders of the hottest entities when the caller knows them (from the
    search index: `SearchIndex.hottest_entities`); otherwise every entity's facts are read."""
    sections: list[Section] = []
    tacit = store.read_text(tacit_file)
    if tacit and tacit.strip():
        sections.append(Section("How the user works", tacit_file, tacit, "tacit"))
    folder = agent_folder(skills_dir, agent)
    skills = store.read_text(f"{folder}/{INDEX_FILE}")
    if skills and skills.strip():
        sections.append(Section(f"Skills of {agent}", f"{folder}/{INDEX_FILE}", skills, "skills"))
    if routine:
        path = f"{folder}/{ROUTINES_DIR}/{slugify(routine)}-skills.md"
        text = store.read_text(path)
        if text and text.strip():
            sections.append(Section(f"Routine {routine}", path, text, "routine"))
    if not hottest:
        candidates = [e for e in EntityCatalog.load(store).entities() if not e.archived]
    else:
        found = (_entity(store, folder) for folder in hottest)
        candidates = [entity for entity in found if entity is not None]
    entities = [
        chosen.entity
        for chosen in ranked_entities(
            store, candidates, agent=agent, today=today, rule=rule, limit=max_entities
        )
    ]
    for entity in entities:
        body = _strip_title(store.read_text(entity.summary_path) or "")
        if not body:
            try:
                body = render_template(read_input(store, entity, today, rule)[0])
            except CorruptFileError as error:
                log.warning("context.entity_skipped", ref=entity.ref, reason=str(error))
                continue
        title = f"{entity.name} ({entity.ref})"
        sections.append(Section(title, entity.summary_path, body, "entity"))
    for label, day in (("Today", today), ("Yesterday", today - timedelta(days=1))):
        text = store.read_text(note_path(day))
        if text and text.strip():
            sections.append(Section(f"{label}, {day.isoformat()}", note_path(day), text, "note"))
    return sections


def _entity(store: ReadOnlyStore, folder: str) -> Entity | None:
    try:
        return entity_at(store, folder)
    except CorruptFileError as error:
        log.warning("context.entity_skipped", folder=folder, reason=str(error))
        return None


# What an active fact weighs in an agent's ranking of entities, by tier: `OWN_FACTOR` times as
# much when it came from the agent's own conversations, whose cold facts weigh `OWN_COLD`.
TIER_WEIGHT: Final[dict[str, int]] = {"hot": 4, "warm": 2, "cold": 0}
OWN_FACTOR: Final = 3
OWN_COLD: Final = 1


def agent_weight(tier: str, fact_agent: str | None, agent: str) -> int:
    """The weight of one active fact of `tier` from `fact_agent` in `agent`'s ranking."""
    if fact_agent == agent:
        return OWN_FACTOR * TIER_WEIGHT[tier] if tier != "cold" else OWN_COLD
    return TIER_WEIGHT[tier]


def ranked_entities(
    store: ReadOnlyStore,
    candidates: Sequence[Entity],
    *,
    agent: str,
    today: date,
    rule: TierRule,
    limit: int,
) -> list[SummaryInput]:
    """Of `candidates`, the `limit` entities `agent` deals with most (module docstring), with
    their summary inputs; an entity weighing nothing is left out."""
    ranked: list[tuple[tuple[int, str], SummaryInput]] = []
    for entity in candidates:
        try:
            text = store.read_text(entity.items_path)
            facts = read_facts(store.root / entity.items_path, text) if text is not None else []
        except CorruptFileError as error:
            log.warning("context.entity_skipped", ref=entity.ref, reason=str(error))
            continue
        score = 0
        for fact in facts:
            if fact.status == "active":
                tier = classify(fact.last_accessed, fact.access_count, today, rule)[0]
                score += agent_weight(tier, fact.agent, agent)
        if score:
            ranked.append(((-score, entity.ref), summary_input(entity, facts, today, rule)))
    ranked.sort(key=lambda item: item[0])
    return [chosen for _, chosen in ranked[:limit]]


def _strip_title(text: str) -> str:
    """A file's text without its `# ` title (the section has its own heading), its own
    headings one level down so that they nest under the section's."""
    lines = text.strip().splitlines()
    if lines and re.match(r"^#\s", lines[0]):
        lines = lines[1:]
    return "\n".join("#" + line if _HEADING.match(line) else line for line in lines).strip()


def fit(
    sections: list[Section],
    *,
    agent: str,
    today: date,
    budget: int,
    ceiling: Ceiling | None = None,
    limit_label: str = "the budget",
) -> Bundle:
    """The bundle of `sections` within `budget` tokens and `ceiling` (module docstring)."""
    limits = [Ceiling(budget, "tokens", estimate_tokens), *([ceiling] if ceiling else [])]
    header = f"# Memory for {agent}, {today.isoformat()}"
    headings = [f"## {section.title} ({section.path})" for section in sections]
    bodies = [_units(_strip_title(section.body)) for section in sections]
    widest = _footer([(section.path, True) for section in sections], limit_label)
    # The footer names every missing path when that fits in a quarter of the limits; else it
    # counts them, so that many sections with long paths cannot push a small budget over.
    compact = any(limit.measure(widest) > limit.amount // 4 for limit in limits)
    if compact:
        widest = _footer([(section.path, True) for section in sections], limit_label, compact)
    meter = _Meter(limits, reserved=[header, widest, ""])
    kept = [0] * len(sections)
    counts = {kind: sum(1 for s in sections if s.kind == kind) for kind in SHARES}
    for index, section in enumerate(sections):
        share = SHARES.get(section.kind, 0.0) / max(1, counts.get(section.kind, 1))
        kept[index] = meter.grow(headings[index], bodies[index], kept[index], share)
    for index in range(len(sections)):
        kept[index] = meter.grow(headings[index], bodies[index], kept[index], None)
    while True:
        bundle = _render(
            sections,
            headings=headings,
            bodies=bodies,
            kept=kept,
            header=header,
            limit_label=limit_label,
            compact=compact,
        )
        if not any(kept):
            return _clipped(bundle, limits)
        if all(limit.measure(bundle.text) <= limit.amount for limit in limits):
            return bundle
        last = max(index for index, count in enumerate(kept) if count)  # pragma: no cover
        kept[last] -= 1  # pragma: no cover - the meter overestimates; kept as a guarantee


class _Meter:
    """What is left of each limit as lines are taken; a line costs its measure plus its
    newline, which never undercounts the joined text."""

    def __init__(self, limits: list[Ceiling], *, reserved: list[str]) -> None:
        self._limits = limits
        self._left = [
            limit.amount - sum(self._cost(limit, t) for t in reserved) for limit in limits
        ]
        self._total = list(self._left)

    @staticmethod
    def _cost(limit: Ceiling, text: str) -> int:
        return limit.measure(text) + 1

    def grow(self, heading: str, body: list[str], kept: int, share: float | None) -> int:
        """Take more whole leading lines of `body` (the heading and its blank lines with the
        first); with `share`, only while the section stays within that fraction of the
        limits. Return how many lines are kept."""
        spent = [0] * len(self._limits)
        while kept < len(body):
            texts = [body[kept]] + ([heading, "", ""] if kept == 0 else [])
            costs = [sum(self._cost(limit, t) for t in texts) for limit in self._limits]
            if any(cost > left for cost, left in zip(costs, self._left, strict=True)):
                break
            if share is not None and any(
                used + cost > share * total
                for used, cost, total in zip(spent, costs, self._total, strict=True)
            ):
                break
            for position, cost in enumerate(costs):
                self._left[position] -= cost
                spent[position] += cost
            kept += 1
        return kept


def _render(
    sections: list[Section],
    *,
    headings: list[str],
    bodies: list[list[str]],
    kept: list[int],
    header: str,
    limit_label: str,
    compact: bool = False,
) -> Bundle:
    parts = [header]
    bundle = Bundle(text="", tokens=0)
    cited: list[str] = []
    missing: list[tuple[str, bool]] = []
    for section, heading, body, count in zip(sections, headings, bodies, kept, strict=True):
        if not count:
            bundle.left_out.append(section.path)
            missing.append((section.path, False))
            continue
        block = heading + "\n\n" + "\n".join(body[:count]).rstrip()
        parts.append(block)
        bundle.included.append(section.path)
        if count < len(body):
            bundle.cut.append(section.path)
            missing.append((section.path, True))
        cited += _cited(block) if section.kind == "entity" else []
    if missing:
        parts.append(_footer(missing, limit_label, compact))
    bundle.text = "\n\n".join(parts) + "\n"
    bundle.tokens = estimate_tokens(bundle.text)
    bundle.chars = len(bundle.text)
    bundle.fact_ids = list(dict.fromkeys(cited))
    return bundle


def _footer(missing: list[tuple[str, bool]], limit_label: str, compact: bool = False) -> str:
    """The one last line naming (or, `compact`, counting) what is not in the bundle and how to
    get it."""
    if compact:
        count = f"{len(missing)} section{'s' if len(missing) != 1 else ''}"
        return f"Left out to fit {limit_label}: {count}. Get them with {HOW_TO_GET}."
    items = ", ".join(f"the rest of {path}" if cut else path for path, cut in missing)
    return f"Left out to fit {limit_label}: {items}. Get them with {HOW_TO_GET}."


def _clipped(bundle: Bundle, limits: Sequence[Ceiling]) -> Bundle:
    """`bundle` (holding no section) within `limits`: its header dropped first (the last line
    says how to get what is missing), then characters, when a budget is too small for both:
    a budget too small for anything still gets no more than it allows."""
    text = bundle.text

    def over(candidate: str) -> bool:
        return any(limit.measure(candidate) > limit.amount for limit in limits)

    if over(text):
        text = text.rstrip("\n").split("\n")[-1] + "\n"
    if over(text):
        low, high = 0, len(text) - 1  # the longest prefix (plus its newline) that fits
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if not over(text[:middle] + "\n") else (low, middle - 1)
        text = text[:low] + "\n"
    bundle.text = text
    bundle.tokens = estimate_tokens(text)
    bundle.chars = len(text)
    return bundle


def _units(body: str) -> list[str]:
    """The lines of `body`, a line longer than `LONG_LINE` split after its sentences so that a
    cut can keep a paragraph's first sentences (a soft line break: the same Markdown). Lines in
    code fences and table rows are kept whole."""
    units: list[str] = []
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or len(line) <= LONG_LINE or line.lstrip().startswith("|"):
            units.append(line)
        else:
            units.extend(part for part in _SENTENCE_END.split(line) if part)
    return units


def _cited(text: str) -> list[str]:
    """The fact ids cited in `text`, in order."""
    return [part.strip() for match in _FACT_ID.findall(text) for part in match.split(",")]


def build_bundle(
    store: ReadOnlyStore,
    *,
    agent: str,
    routine: str | None,
    today: date,
    rule: TierRule,
    tacit_file: str,
    skills_dir: str,
    budget: int = DEFAULT_BUDGET,
    hottest: Sequence[str] | None = None,
    ceiling: Ceiling | None = None,
    limit_label: str = "the budget",
) -> Bundle:
    """The agent's fitted start-of-run bundle for `today` (`hottest`: see `gather_sections`;
    `ceiling`: a hook format's, `memoryd.reading.formats`)."""
    sections = gather_sections(
        store,
        agent=agent,
        routine=routine,
        today=today,
        rule=rule,
        tacit_file=tacit_file,
        skills_dir=skills_dir,
        hottest=hottest,
    )
    return fit(
        sections,
        agent=agent,
        today=today,
        budget=budget,
        ceiling=ceiling,
        limit_label=limit_label,
    )
