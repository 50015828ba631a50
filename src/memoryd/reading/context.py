"""`memoryd context`: the start-of-run bundle an agent loads (docs/cli.md, Reading the memory).

The bundle is Markdown, made of sections in this order, which is also their priority when the
token budget is short:

1. the tacit file (`store.tacit_file`): how the user works;
2. the agent's skills index, then its routine's file when `--routine` is given;
3. the summaries of the hottest entities: those with the most hot facts, then the most warm
   ones, then by folder; at most `MAX_ENTITIES`, each entity's `summary.md` as it stands (the
   heartbeat keeps it current), or the template when it has none yet. The ranking comes from
   the search index when the caller has it (fast on a large store), else from reading every
   entity's facts;
4. today's daily note, then yesterday's (dates in `schedule.timezone`).

Fitting: sections are taken whole in priority order while they fit; the first one that does
not fit is cut at a line boundary (when at least `MIN_CUT_TOKENS` remain) with a line saying
so; later sections are left out and listed in the last line, so the agent knows what to look
up with `memoryd search`. Tokens are `memoryd.llm.base.estimate_tokens`, the generous estimate
the heartbeat uses.

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
from memoryd.reading.files import ReadOnlyStore
from memoryd.store.catalog import EntityCatalog, entity_at
from memoryd.store.entities import Entity
from memoryd.store.notes import note_path
from memoryd.store.skills import INDEX_FILE, ROUTINES_DIR, agent_folder
from memoryd.store.summaries import SummaryInput, read_input, render_template
from memoryd.store.tiers import TierRule
from memoryd.worktree import slugify

log = get_logger(__name__)

DEFAULT_BUDGET: Final = 4000
MAX_ENTITIES: Final = 12
MIN_CUT_TOKENS: Final = 60
CUT_LINE: Final = "… (cut to fit the budget: `memoryd search` finds the rest)"
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
    if hottest is None:
        entities = [
            summary_input.entity
            for summary_input in hottest_entities(store, today=today, rule=rule, limit=max_entities)
        ]
    else:
        found = (_entity(store, folder) for folder in hottest[:max_entities])
        entities = [entity for entity in found if entity is not None]
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


def hottest_entities(
    store: ReadOnlyStore, *, today: date, rule: TierRule, limit: int
) -> list[SummaryInput]:
    """The active entities with hot or warm facts, hottest first (module docstring)."""
    ranked: list[tuple[tuple[int, int, str], SummaryInput]] = []
    for entity in EntityCatalog.load(store).entities():
        if entity.archived:
            continue
        try:
            summary_input, _ = read_input(store, entity, today, rule)
        except CorruptFileError as error:
            log.warning("context.entity_skipped", ref=entity.ref, reason=str(error))
            continue
        hot = len(summary_input.tier_facts("hot"))
        warm = len(summary_input.tier_facts("warm"))
        if hot + warm:
            ranked.append(((-hot, -warm, entity.ref), summary_input))
    ranked.sort(key=lambda item: item[0])
    return [summary_input for _, summary_input in ranked[:limit]]


def _strip_title(text: str) -> str:
    """A file's text without its `# ` title (the section has its own heading), its own
    headings one level down so that they nest under the section's."""
    lines = text.strip().splitlines()
    if lines and re.match(r"^#\s", lines[0]):
        lines = lines[1:]
    return "\n".join("#" + line if _HEADING.match(line) else line for line in lines).strip()


def fit(sections: list[Section], *, agent: str, today: date, budget: int) -> Bundle:
    """The bundle of `sections` within `budget` tokens (module docstring)."""
    header = f"# Memory for {agent}, {today.isoformat()}"
    parts = [header]
    used = estimate_tokens(header)
    bundle = Bundle(text="", tokens=0)
    full = False
    cited: list[str] = []
    for section in sections:
        heading = f"## {section.title} ({section.path})"
        block = f"{heading}\n\n{_strip_title(section.body)}"
        cost = estimate_tokens(block) + 1
        if not full and used + cost <= budget:
            parts.append(block)
            used += cost
            bundle.included.append(section.path)
            cited += _cited(block) if section.kind == "entity" else []
            continue
        remaining = budget - used - estimate_tokens(heading) - estimate_tokens(CUT_LINE) - 2
        if not full and remaining >= MIN_CUT_TOKENS:
            kept = _cut(_strip_title(section.body), remaining)
            if kept:
                block = f"{heading}\n\n{kept}\n{CUT_LINE}"
                parts.append(block)
                used += estimate_tokens(block) + 1
                bundle.included.append(section.path)
                bundle.cut.append(section.path)
                cited += _cited(block) if section.kind == "entity" else []
        full = True
        if section.path not in bundle.included:
            bundle.left_out.append(section.path)
    if bundle.left_out:
        parts.append("Left out to fit the budget: " + ", ".join(bundle.left_out))
    bundle.text = "\n\n".join(parts) + "\n"
    bundle.tokens = estimate_tokens(bundle.text)
    bundle.fact_ids = list(dict.fromkeys(cited))
    return bundle


def _cited(text: str) -> list[str]:
    """The fact ids cited in `text`, in order."""
    return [part.strip() for match in _FACT_ID.findall(text) for part in match.split(",")]


def _cut(body: str, tokens: int) -> str:
    """The longest run of whole leading lines of `body` within `tokens`."""
    kept: list[str] = []
    used = 0
    for line in body.splitlines():
        cost = estimate_tokens(line) + 1
        if used + cost > tokens:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept).rstrip()


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
) -> Bundle:
    """The agent's fitted start-of-run bundle for `today` (`hottest`: see `gather_sections`)."""
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
    return fit(sections, agent=agent, today=today, budget=budget)
