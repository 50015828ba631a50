"""`memoryd explain <target>`: why a fact is hot, warm or cold, and whether it is summarized.

The target is what an operator types: a fact id, a ref (`people/dana-whitfield`, or with the
kind, `person/dana-whitfield`), a bare slug, or an entity's name or alias (case, accents and
spacing aside). A name several entities answer to is refused with the candidates listed
(AmbiguousTargetError); an unknown target is refused with the closest names and slugs.

For a fact id: its entity, status, `lastAccessed`, age in days, `accessCount`, the resistance
those accesses buy, the day limits that follow, the tier, the day its tier next changes, and
whether the entity's `summary.md` cites it. For an entity ref: the same, one line per active
fact, hot first, plus when its summary was last rewritten. Reads only; changes nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from datetime import date

from memoryd.errors import MemorydError
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import LAYOUTS, Entity, normalize_name
from memoryd.store.items import Fact, parse_items, split_fact_id
from memoryd.store.tiers import TIERS, TierRule, describe
from memoryd.wording import plural
from memoryd.worktree import FileTransaction


class UnknownTargetError(MemorydError):
    """`explain` was given something that is neither a fact id nor an entity ref of the store."""

    exit_code = 2


class AmbiguousTargetError(UnknownTargetError):
    """`explain` was given a name or alias that more than one entity answers to."""


def _kind_and_slug(entity: Entity, prefix: str, slug: str) -> bool:
    wanted = prefix.strip("/")
    return entity.slug == slug and wanted in (entity.kind, LAYOUTS[entity.kind].ref_prefix[:-1])


def _suggestions(catalog: EntityCatalog, target: str) -> list[str]:
    labels: dict[str, Entity] = {}
    for entity in catalog.entities():
        for label in (entity.name, *entity.aliases, entity.slug, entity.ref):
            labels.setdefault(label.casefold(), entity)
    close = difflib.get_close_matches(target.casefold(), list(labels), n=12, cutoff=0.6)
    found = {labels[label].ref: labels[label] for label in close}
    return [f"{ref} ({entity.name})" for ref, entity in list(found.items())[:3]]


def resolve_target(tx: FileTransaction, target: str) -> tuple[Entity, Fact | None]:
    """The entity `target` names and, for a fact id, the fact. Raise UnknownTargetError (or
    AmbiguousTargetError, which lists the candidates)."""
    catalog = EntityCatalog.load(tx)
    wanted = target.strip()
    entity = catalog.by_ref(wanted)
    if entity is not None:
        return entity, None
    parts = split_fact_id(wanted)
    owner = catalog.by_slug(parts[0]) if parts else None
    fact = next((f for f in _facts(tx, owner) if f.id == wanted), None) if owner else None
    if owner is not None and fact is not None:
        return owner, fact
    prefix, _, slug = wanted.rpartition("/")
    entity = catalog.by_slug(slug)
    if entity is not None and (not prefix or _kind_and_slug(entity, prefix, slug)):
        return entity, None
    key = normalize_name(wanted)
    named = [
        candidate
        for candidate in catalog.entities()
        if key and key in {normalize_name(label) for label in (candidate.name, *candidate.aliases)}
    ]
    if len(named) == 1:
        return named[0], None
    if named:
        listed = "; ".join(f"{e.ref} ({e.name}{', archived' if e.archived else ''})" for e in named)
        raise AmbiguousTargetError(
            f"{wanted!r} names {len(named)} entities: {listed}; explain one of these refs"
        )
    close = _suggestions(catalog, wanted)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise UnknownTargetError(
        f"{wanted!r} is no fact id, ref, slug, name or alias of an entity here{hint}"
    )


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
    tracking: Callable[[str], EntityRewrite | None] = lambda ref: None,
) -> str:
    """The explanation text for `target` (see the module); `tracking` gives an entity's rewrite
    record by ref. Raise UnknownTargetError."""
    entity, fact = resolve_target(tx, target)
    if fact is not None:
        cited = _cited(tx.read_text(entity.summary_path), fact.id)
        lines = [f"{entity.ref} ({entity.name})", *_fact_lines(fact, today, rule, cited)]
        lines.append(f"(all of its facts: memoryd explain {entity.ref})")
        return "\n".join(lines) + "\n"
    tracked = tracking(entity.ref)
    summary_text = tx.read_text(entity.summary_path)
    facts = _facts(tx, entity)
    active = [f for f in facts if f.status == "active"]
    order = {tier: position for position, tier in enumerate(TIERS)}
    active.sort(key=lambda f: (order[describe(f, today, rule).tier], f.id))
    header = [
        f"{entity.ref} ({entity.name}): {plural(len(active), 'active fact')}, "
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
