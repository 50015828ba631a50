"""What an entity's `summary.md` is written from, and its deterministic template.

A summary rests on an entity's active facts, by decay tier (`memoryd.store.tiers`): the hot and
warm ones are given (hot first, each tier in id order, at most `MAX_SUMMARY_FACTS`), the cold
ones only counted, except that an entity with no hot or warm fact is given its
`BACKGROUND_FACTS` most important cold facts instead (`background_order`: most used, then by
category, then newest), so that a summary always says what the entity is, even when nothing
about it was used for months. A fact that was already old when it was filed or last used, or a
cold one, is marked with the month it dates from (`SummaryFact.dated`, "(from 2026-03)").
`summary_input` computes that input and a digest of it, so a job can tell
whether a summary must change without reading it; `render_template` is the body memoryd writes
without a model (the weekly rewrite's template mode, and the heartbeat's refresh of a summary it
made stale). The file is `# <entity name>`, a blank line, the body and a newline
(`summary_file`). Everything here is pure: the same input gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final, Protocol

from memoryd.errors import CorruptFileError
from memoryd.store.entities import Entity
from memoryd.store.items import split_fact_id
from memoryd.store.text import one_line
from memoryd.store.tiers import Tier, TierRule, classify
from memoryd.worktree import FileTransaction

# A summary rests on at most this many facts: hot ones first, so the freshest always make it.
MAX_SUMMARY_FACTS = 80
# How many cold facts an entity with no hot or warm one is summarized from.
BACKGROUND_FACTS = 5
# The order of importance of the categories when cold facts are chosen as background.
CATEGORY_WEIGHT: Final[dict[str, int]] = {
    "milestone": 0,
    "relationship": 1,
    "status": 2,
    "decision": 3,
    "preference": 4,
    "context": 5,
}
TEMPLATE_REF: Final = "summary-template@1"
RECENT_HEADING: Final = "## Recent"
BACKGROUND_HEADING: Final = "## Background"

FACT_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*-[0-9]{3,}"
# Anything bracketed that starts like a fact id is a citation attempt and is checked whole.
CITATION = re.compile(r"\[\s*(" + FACT_ID + r"(?:\s*[,;]?\s*[^\]\[]*)?)\]")
CITED_ID = re.compile(FACT_ID)


@dataclass(frozen=True)
class SummaryFact:
    id: str
    text: str
    category: str
    timestamp: date
    tier: Tier
    # "YYYY-MM" of `timestamp` when the fact is cold (background) or was already older than
    # `warm_days` when it was last used or filed; None for a fact as recent as its use.
    dated: str | None = None


@dataclass(frozen=True)
class SummaryInput:
    """What an entity's summary is written from, and when that changes by itself."""

    entity: Entity
    facts: tuple[SummaryFact, ...]  # hot then warm, each in id order; or background cold ones
    active_count: int
    cold_count: int
    next_change: date | None  # the first day one of its active facts changes tier
    digest: str

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(fact.id for fact in self.facts)

    @property
    def hot_ids(self) -> frozenset[str]:
        return frozenset(fact.id for fact in self.facts if fact.tier == "hot")

    @property
    def in_use(self) -> bool:
        """Whether it rests on a hot or warm fact (else only on cold background facts, or none:
        the weekly rewrite then renders the template without a model)."""
        return any(fact.tier != "cold" for fact in self.facts)

    def tier_facts(self, tier: Tier) -> list[SummaryFact]:
        return [fact for fact in self.facts if fact.tier == tier]


class FactFields(Protocol):
    """What a summary input needs of a fact (a `Fact`, or the lean rows of `read_facts`)."""

    @property
    def id(self) -> str: ...
    @property
    def fact(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def timestamp(self) -> date: ...
    @property
    def status(self) -> str: ...
    @property
    def last_accessed(self) -> date: ...
    @property
    def access_count(self) -> int: ...


@dataclass(frozen=True)
class FactRow:
    id: str
    fact: str
    category: str
    timestamp: date
    status: str
    last_accessed: date
    access_count: int
    agent: str | None = None  # the agent whose conversation it came from (`source.agent`)


def read_facts(path: Path, text: str) -> list[FactRow]:
    """The fields of each fact a summary needs, from an items.json text.

    A lean reader: `memoryd.store.items.parse_items` builds and checks every field of every
    fact, which is most of the cost of a pass over a large store; this reads only the fields
    used here, each checked for its type. Raise CorruptFileError naming `path` otherwise.
    """
    try:
        return _rows(json.loads(text))
    except (ValueError, TypeError, KeyError) as error:
        raise CorruptFileError(path, f"unreadable facts ({error})") from None


def _rows(document: Any) -> list[FactRow]:
    if not isinstance(document, list):
        raise TypeError("expected a JSON array of facts")
    return [_row(item) for item in document]


def _row(item: dict[str, Any]) -> FactRow:
    fields = (item["id"], item["fact"], item["category"], item["status"])
    count = item["accessCount"]
    if not all(isinstance(value, str) for value in fields) or type(count) is not int:
        raise TypeError("a fact has a field of the wrong type")
    return FactRow(
        id=item["id"],
        fact=item["fact"],
        category=item["category"],
        timestamp=date.fromisoformat(item["timestamp"]),
        status=item["status"],
        last_accessed=date.fromisoformat(item["lastAccessed"]),
        access_count=count,
        agent=_agent(item.get("source")),
    )


def _agent(source: Any) -> str | None:
    agent = source.get("agent") if isinstance(source, dict) else None
    return agent if isinstance(agent, str) else None


def _order(fact: FactFields) -> tuple[int, int, str]:
    parts = split_fact_id(fact.id)
    return (0, parts[1], fact.id) if parts else (1, 0, fact.id)


def summary_input(
    entity: Entity, facts: Iterable[FactFields], today: date, rule: TierRule
) -> SummaryInput:
    """The summary input of `entity` with `facts` on `today`."""
    active = sorted((f for f in facts if f.status == "active"), key=_order)
    by_tier: dict[Tier, list[SummaryFact]] = {"hot": [], "warm": [], "cold": []}
    cold: list[FactFields] = []
    changes: list[date] = []
    for fact in active:
        tier, change = classify(fact.last_accessed, fact.access_count, today, rule)
        if tier == "cold":
            cold.append(fact)
        else:
            by_tier[tier].append(_summary_fact(fact, tier, rule))
        if change is not None:
            changes.append(change)
    chosen = (by_tier["hot"] + by_tier["warm"])[:MAX_SUMMARY_FACTS]
    if not chosen:
        background = sorted(cold, key=background_order)[:BACKGROUND_FACTS]
        chosen = [_summary_fact(fact, "cold", rule) for fact in background]
    document = {
        "name": entity.name,
        "ref": entity.ref,
        "cold": bool(cold),
        "facts": [
            [f.tier, f.id, f.text, f.category, f.timestamp.isoformat(), f.dated] for f in chosen
        ],
    }
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return SummaryInput(
        entity=entity,
        facts=tuple(chosen),
        active_count=len(active),
        cold_count=len(cold),
        next_change=min(changes, default=None),
        digest=hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32],
    )


def background_order(fact: FactFields) -> tuple[int, int, int, tuple[int, int, str]]:
    """The order of importance of cold facts as background: most used first, then by category
    (`CATEGORY_WEIGHT`), then the newest, then by id."""
    weight = CATEGORY_WEIGHT.get(fact.category, len(CATEGORY_WEIGHT))
    return (-fact.access_count, weight, -fact.timestamp.toordinal(), _order(fact))


def _summary_fact(fact: FactFields, tier: Tier, rule: TierRule) -> SummaryFact:
    # Marked when cold, or when it was already old at its last use (a backfilled fact is filed
    # today from a conversation of months ago): depends on the fact alone, not on today.
    old = tier == "cold" or (fact.last_accessed - fact.timestamp).days > rule.warm_days
    dated = fact.timestamp.strftime("%Y-%m") if old else None
    return SummaryFact(fact.id, fact.fact, fact.category, fact.timestamp, tier, dated)


def read_input(
    tx: FileTransaction, entity: Entity, today: date, rule: TierRule
) -> tuple[SummaryInput, str]:
    """The entity's summary input and items digest, read through `tx`. Raise CorruptFileError
    when its items.json does not parse."""
    text = tx.read_text(entity.items_path)
    facts = read_facts(tx.root / entity.items_path, text) if text is not None else []
    return summary_input(entity, facts, today, rule), items_digest(text)


def items_digest(text: str | None) -> str:
    """The hash of an items.json text as read (an absent file hashes like an empty one)."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:32]


def render_template(summary_input: SummaryInput) -> str:
    """The deterministic body: the given facts themselves, one cited line each, the hot ones
    under "Recent", then the warm and background (cold) ones under "Background"; a fact with a
    `dated` month says so, "(from 2026-03)"."""
    lines: list[str] = []
    recent = summary_input.tier_facts("hot")
    background = summary_input.tier_facts("warm") + summary_input.tier_facts("cold")
    for heading, facts in ((RECENT_HEADING, recent), (BACKGROUND_HEADING, background)):
        if facts:
            if lines:
                lines.append("")
            lines += [heading, ""]
            lines += [_line(fact) for fact in facts]
    return "\n".join(lines)


def _line(fact: SummaryFact) -> str:
    since = f" (from {fact.dated})" if fact.dated else ""
    return f"- {_escape(one_line(fact.text))}{since} [{fact.id}]"


def _escape(text: str) -> str:
    # A fact that itself contains something shaped like a citation would make its own line
    # invalid; brackets become parentheses in the template (the fact itself is untouched).
    return CITATION.sub(lambda match: "(" + match.group(1) + ")", text)


def all_cold_body(name: str) -> str:
    """The body of an entity none of whose facts is given (`summary_input` gives background
    facts whenever it has an active one, so only a summary input made by hand gets here)."""
    return (
        f"Nothing about {one_line(name)} has been used recently: its facts are kept in "
        "items.json and left out of this summary until they are used again."
    )


def summary_file(name: str, body: str) -> str:
    """The text of summary.md: memoryd's `# <name>` heading, then the body."""
    heading = f"# {one_line(name)}\n"
    return heading + (f"\n{body.strip()}\n" if body.strip() else "")
