"""`memoryd explain <fact-id|ref>`: why a fact is hot, warm or cold, and whether it is summarized.

For a fact id: its entity, status, `lastAccessed`, age in days, `accessCount`, the resistance
those accesses buy, the day limits that follow, the tier, the day its tier next changes, and
whether the entity's `summary.md` cites it. For an entity ref: the same, one line per active
fact, hot first, plus when its summary was last rewritten. Reads only; changes nothing.
"""

from __future__ import annotations

from datetime import date

from memoryd.errors import MemorydError
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import Entity
from memoryd.store.items import Fact, parse_items, split_fact_id
from memoryd.store.tiers import TIERS, TierRule, describe
from memoryd.worktree import FileTransaction


class UnknownTargetError(MemorydError):
    """`explain` was given something that is neither a fact id nor an entity ref of the store."""

    exit_code = 2


def _facts(tx: FileTransaction, entity: Entity) -> list[Fact]:
    text = tx.read_text(entity.items_path)
    return parse_items(tx.root / entity.items_path, text) if text is not None else []


def _cited(summary_text: str | None, fact_id: str) -> bool:
    text = summary_text or ""
    return any(
        fact_id in part.split(",")
        for part in (
            chunk.split("]", 1)[0].replace(" ", "") for chunk in text.split("[")[1:] if "]" in chunk
        )
    )


def _fact_lines(fact: Fact, today: date, rule: TierRule, cited: bool) -> list[str]:
    if fact.status != "active":
        return [
            f"{fact.id}: superseded by {fact.superseded_by or '?'}; superseded facts have no tier "
            "and are never summarized",
        ]
    info = describe(fact, today, rule)
    change = (
        f"turns {TIERS[TIERS.index(info.tier) + 1]} on {info.next_change.isoformat()}"
        if info.next_change is not None
        else "stays cold until it is used again"
    )
    return [
        f"{fact.id}: {info.tier.upper()} — {fact.fact}",
        f"  last accessed {fact.last_accessed.isoformat()} ({info.age_days} days before "
        f"{today.isoformat()}), {info.access_count} accesses",
        f"  resistance {info.resistance_days} days, so hot up to {info.hot_until_age} days, "
        f"warm up to {info.warm_until_age} days; {change}",
        f"  {'cited in' if cited else 'not in'} the summary",
    ]


def explain_target(
    tx: FileTransaction,
    target: str,
    *,
    today: date,
    rule: TierRule,
    tracked: EntityRewrite | None = None,
) -> str:
    """The explanation text for a fact id or an entity ref. Raise UnknownTargetError."""
    catalog = EntityCatalog.load(tx)
    entity = catalog.by_ref(target)
    if entity is None:
        parts = split_fact_id(target)
        owner = catalog.by_slug(parts[0]) if parts else None
        fact = next((f for f in _facts(tx, owner) if f.id == target), None) if owner else None
        if owner is None or fact is None:
            raise UnknownTargetError(f"{target!r} is neither a fact id nor an entity ref here")
        cited = _cited(tx.read_text(owner.summary_path), fact.id)
        lines = [f"{owner.ref} ({owner.name})", *_fact_lines(fact, today, rule, cited)]
        return "\n".join(lines) + "\n"
    summary_text = tx.read_text(entity.summary_path)
    facts = _facts(tx, entity)
    active = [f for f in facts if f.status == "active"]
    order = {tier: position for position, tier in enumerate(TIERS)}
    active.sort(key=lambda f: (order[describe(f, today, rule).tier], f.id))
    header = [
        f"{entity.ref} ({entity.name}): {len(active)} active facts, "
        f"{len(facts) - len(active)} superseded",
        "summary last rewritten "
        + (
            tracked.rewritten_at.date().isoformat()
            if tracked is not None and tracked.rewritten_at.year > 1970
            else "never"
        )
        + (
            f"; next tier change {tracked.next_tier_change.isoformat()}"
            if tracked is not None and tracked.next_tier_change is not None
            else ""
        ),
        f"rule: hot up to {rule.hot_days} days, warm up to {rule.warm_days}, plus "
        f"floor({rule.resistance_days_per_doubling:g} x log2(1 + accesses)) days, at most "
        f"{rule.max_resistance_days}",
    ]
    body = [
        line
        for fact in active
        for line in _fact_lines(fact, today, rule, _cited(summary_text, fact.id))
    ]
    return "\n".join([*header, "", *body]) + "\n"
