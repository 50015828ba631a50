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
sections cut or left out (counts them, when naming them all would take over a quarter of a
limit) and how to get them (`memoryd search`, the MCP tools), and its room is kept from the
start, so the output never exceeds a limit, however small (`memoryd.reading.fitting`). An
agent's notes hold its own timeline lines and the shared ones (docs/agents.md). Tokens are
`memoryd.llm.base.estimate_tokens`, the estimate the heartbeat uses (about 4 ASCII characters a
token: a 4,000-token budget alone allows about 16,000 characters, more than a hook may print).

Nothing here calls a model, writes anything, or takes a lock: the same store on the same day
gives the same bytes. The facts whose ids the included summaries cite are returned as
`fact_ids`, so that the caller can queue them as read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Final

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.reading._entries import line_agent
from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.fitting import HOW_TO_GET, Bundle, Section, fit, strip_title
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
__all__ = ["HOW_TO_GET", "Bundle", "Section", "build_bundle", "fit", "gather_sections"]

DEFAULT_BUDGET: Final = 4000
MAX_ENTITIES: Final = 12
# How many of the search index's hottest entities are ranked for the agent.
CANDIDATES: Final = 3 * MAX_ENTITIES


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
    share: bool = False,
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
        body = strip_title(store.read_text(entity.summary_path) or "")
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
        text = text if share or not text else _own_lines(text, agent)
        if text and text.strip():
            sections.append(Section(f"{label}, {day.isoformat()}", note_path(day), text, "note"))
    return sections


def _own_lines(note: str, agent: str) -> str:
    """`note` without the timeline lines of the other agents (docs/agents.md, What an agent
    reads): its own lines and the shared ones (pending facts, what a person wrote) stay."""
    kept = [line for line in note.splitlines() if line_agent(line.strip()) in (None, agent)]
    return "\n".join(kept)


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
    share: bool = False,
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
        share=share,
    )
    return fit(
        sections,
        agent=agent,
        today=today,
        budget=budget,
        ceiling=ceiling,
        limit_label=limit_label,
    )
