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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Literal

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.entities import Entity
from memoryd.store.summaries import SummaryInput, items_digest, read_facts, summary_input
from memoryd.store.tiers import TierRule
from memoryd.worktree import FileTransaction

log = get_logger(__name__)

Mode = Literal["llm", "template"]
# The "rewritten at" of an entity tracked before its summary was ever rewritten.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
