"""The selection pass: which entities' summaries must be rewritten today, without any LLM.

An entity's *summary input* is what its summary is written from: its name, and its hot then warm
active facts (id, text, category, timestamp, tier), at most `MAX_SUMMARY_FACTS`, each tier in id
order. Its digest (`SummaryInput.digest`) changes exactly when the facts or their tiers change;
an access bump that leaves every tier alone does not change it, so it causes no rewrite.

What the state database keeps per entity (`RewriteTracking`) after a rewrite is the *tracking
digest* `<mode>:<items digest>:<input digest>` and the entity's next tier-change date:

- `mode` is `llm` or `template`; a summary rendered by the template because the LLM was
  unavailable is redone by the LLM on a later run, while with `provider = "markers"` the template
  is the final form;
- `items digest` is the hash of `items.json` as read. When it is unchanged and the next tier
  change is still in the future, nothing about the entity can have changed, and its facts are not
  even parsed (the fast path that keeps the weekly pass cheap on a large store);
- otherwise the facts are parsed and the input digest decides.

Invariants: the same store, tracking and day give the same selection; an entity is selected iff
its input differs from the one its summary was last written from (or the mode differs); the
passing of days alone selects exactly the entities with a fact changing tier.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.rewrite.tiers import Tier, TierRule, classify
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.entities import Entity
from memoryd.store.items import split_fact_id
from memoryd.store.transaction import FileTransaction

log = get_logger(__name__)

Mode = Literal["llm", "template"]
# A summary rests on at most this many facts: hot ones first, so the freshest always make it.
MAX_SUMMARY_FACTS = 80
# The "rewritten at" of an entity tracked before its summary was ever rewritten.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SummaryFact:
    id: str
    text: str
    category: str
    timestamp: date
    tier: Tier


@dataclass(frozen=True)
class SummaryInput:
    """What an entity's summary is written from, and when that changes by itself."""

    entity: Entity
    facts: tuple[SummaryFact, ...]  # hot then warm, each tier in id order
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

    def tier_facts(self, tier: Tier) -> list[SummaryFact]:
        return [fact for fact in self.facts if fact.tier == tier]


@dataclass(frozen=True)
class Candidate:
    """An entity whose summary must be rewritten, with what to record once it is."""

    input: SummaryInput
    items_digest: str
    previous: EntityRewrite | None


@dataclass
class Selection:
    changed: list[Candidate] = field(default_factory=list)
    # Entities whose items.json changed without changing their summary input: only the
    # tracking is refreshed, so the fast path works again next time.
    refreshed: list[EntityRewrite] = field(default_factory=list)
    entities: int = 0
    parsed: int = 0  # entities whose facts had to be read (the rest took the fast path)
    corrupt: list[str] = field(default_factory=list)


def tracking_digest(mode: Mode, items_digest: str, input_digest: str) -> str:
    return f"{mode}:{items_digest}:{input_digest}"


def split_tracking(digest: str) -> tuple[str, str, str] | None:
    parts = digest.split(":")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


def items_digest(text: str | None) -> str:
    """The hash of an items.json text as read (an absent file hashes like an empty one)."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:32]


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
class _Row:
    id: str
    fact: str
    category: str
    timestamp: date
    status: str
    last_accessed: date
    access_count: int


def read_facts(path: Path, text: str) -> list[_Row]:
    """The fields of each fact a summary needs, from an items.json text.

    A lean reader: `memoryd.store.items.parse_items` builds and checks every field of every
    fact, which is most of the cost of a pass over a large store; this reads only the fields
    used here, each checked for its type. Raise CorruptFileError naming `path` otherwise.
    """
    try:
        return _rows(json.loads(text))
    except (ValueError, TypeError, KeyError) as error:
        raise CorruptFileError(path, f"unreadable facts ({error})") from None


def _rows(document: Any) -> list[_Row]:
    if not isinstance(document, list):
        raise TypeError("expected a JSON array of facts")
    return [_row(item) for item in document]


def _row(item: dict[str, Any]) -> _Row:
    fields = (item["id"], item["fact"], item["category"], item["status"])
    count = item["accessCount"]
    if not all(isinstance(value, str) for value in fields) or type(count) is not int:
        raise TypeError("a fact has a field of the wrong type")
    return _Row(
        id=item["id"],
        fact=item["fact"],
        category=item["category"],
        timestamp=date.fromisoformat(item["timestamp"]),
        status=item["status"],
        last_accessed=date.fromisoformat(item["lastAccessed"]),
        access_count=count,
    )


def _order(fact: FactFields) -> tuple[int, int, str]:
    parts = split_fact_id(fact.id)
    return (0, parts[1], fact.id) if parts else (1, 0, fact.id)


def summary_input(
    entity: Entity, facts: Iterable[FactFields], today: date, rule: TierRule
) -> SummaryInput:
    """The summary input of `entity` with `facts` on `today`."""
    active = sorted((f for f in facts if f.status == "active"), key=_order)
    by_tier: dict[Tier, list[SummaryFact]] = {"hot": [], "warm": [], "cold": []}
    changes: list[date] = []
    for fact in active:
        tier, change = classify(fact.last_accessed, fact.access_count, today, rule)
        by_tier[tier].append(SummaryFact(fact.id, fact.fact, fact.category, fact.timestamp, tier))
        if change is not None:
            changes.append(change)
    chosen = (by_tier["hot"] + by_tier["warm"])[:MAX_SUMMARY_FACTS]
    document = {
        "name": entity.name,
        "ref": entity.ref,
        "cold": bool(by_tier["cold"]),
        "facts": [[f.tier, f.id, f.text, f.category, f.timestamp.isoformat()] for f in chosen],
    }
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return SummaryInput(
        entity=entity,
        facts=tuple(chosen),
        active_count=len(active),
        cold_count=len(by_tier["cold"]),
        next_change=min(changes, default=None),
        digest=hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32],
    )


def read_input(
    tx: FileTransaction, entity: Entity, today: date, rule: TierRule
) -> tuple[SummaryInput, str]:
    """The entity's summary input and items digest, read through `tx`. Raise CorruptFileError
    when its items.json does not parse."""
    text = tx.read_text(entity.items_path)
    facts = read_facts(tx.root / entity.items_path, text) if text is not None else []
    return summary_input(entity, facts, today, rule), items_digest(text)


def select(
    tx: FileTransaction,
    entities: Iterable[Entity],
    tracked: Mapping[str, EntityRewrite],
    *,
    today: date,
    rule: TierRule,
    mode: Mode,
) -> Selection:
    """The entities whose summaries must be rewritten on `today` in `mode` (module docstring)."""
    selection = Selection()
    for entity in entities:
        selection.entities += 1
        previous = tracked.get(entity.ref)
        stored = split_tracking(previous.digest) if previous is not None else None
        text = tx.read_text(entity.items_path)
        file_digest = items_digest(text)
        if (
            previous is not None
            and stored is not None
            and stored[0] == mode
            and stored[1] == file_digest
            and (previous.next_tier_change is None or previous.next_tier_change > today)
        ):
            continue
        selection.parsed += 1
        try:
            facts = read_facts(tx.root / entity.items_path, text) if text is not None else []
        except CorruptFileError as error:
            log.error("rewrite.corrupt_items", ref=entity.ref, error=str(error))
            selection.corrupt.append(entity.ref)
            continue
        current = summary_input(entity, facts, today, rule)
        if previous is not None and stored is not None and stored[0] == mode:
            if stored[2] == current.digest:
                selection.refreshed.append(
                    EntityRewrite(
                        entity.ref,
                        previous.rewritten_at,
                        tracking_digest(mode, file_digest, current.digest),
                        current.next_change,
                    )
                )
                continue
        elif previous is None and not current.active_count:
            # Never summarized and nothing to summarize: the placeholder summary stays, and
            # the entity is tracked so the fast path covers it from now on.
            selection.refreshed.append(
                EntityRewrite(
                    entity.ref,
                    _EPOCH,
                    tracking_digest(mode, file_digest, current.digest),
                    current.next_change,
                )
            )
            continue
        selection.changed.append(Candidate(current, file_digest, previous))
    return selection
