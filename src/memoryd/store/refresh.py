"""Summaries refreshed by a heartbeat: new facts are visible at once, not after the weekly rewrite.

A heartbeat that changes an entity's `items.json` renders that entity's `summary.md` again with
the deterministic template (`memoryd.rewrite.summaries.render_template`: hot facts under "Recent",
then warm ones under "Background", each line citing its fact), in the heartbeat's own commit,
when the summary is out of date: a hot or warm fact is not cited in it (a new fact, or one the
summary left out), or it cites a fact that is no longer active (superseded or retracted). A
change of access counts alone (reads by agents) leaves a summary that is still true alone, so
the model's prose of the last weekly rewrite is not replaced by the template for nothing. The
weekly rewrite still selects the entity (its facts changed since it was last rewritten) and
replaces the template with the model's prose. An entity whose active facts are all cold gets the
template of its most important ones as background, as the rewrite gives it; one with no active
fact keeps whatever summary it has.
Pure over the transaction: the same facts on the same day give the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.store.catalog import EntityCatalog, bucket_entry
from memoryd.store.entities import LAYOUTS, Entity
from memoryd.store.summaries import (
    read_facts,
    render_template,
    summary_file,
    summary_input,
)
from memoryd.store.tiers import TierRule
from memoryd.worktree import FileTransaction

log = get_logger("memoryd.rewrite.refresh")  # the name its events always had

_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*-[0-9]{3,}")
_CITED = re.compile(r"\[([a-z0-9][a-z0-9, -]*)\]")


def refresh_summaries(
    tx: FileTransaction,
    catalog: EntityCatalog,
    items_paths: Iterable[str],
    *,
    today: date,
    rule: TierRule,
) -> list[str]:
    """Render the template summary of each entity whose `items.json` is among `items_paths`
    (as staged in `tx`); stage the summaries whose text changes and return their refs."""
    refreshed: list[str] = []
    for path in sorted(set(items_paths)):
        entity = _owner(catalog, path)
        if entity is None:
            continue
        text = tx.read_text(entity.items_path)
        try:
            facts = read_facts(tx.root / entity.items_path, text) if text is not None else []
        except CorruptFileError as error:
            log.warning("summary.not_refreshed", ref=entity.ref, reason=str(error))
            continue
        current = summary_input(entity, facts, today, rule)
        existing = tx.read_text(entity.summary_path) or ""
        cited = {cited for group in _CITED.findall(existing) for cited in _ID.findall(group)}
        active = {fact.id for fact in facts if fact.status == "active"}
        has_body = any(line.strip() and not line.startswith("#") for line in existing.splitlines())
        if current.ids <= cited <= active and (has_body or not active):
            continue  # still true: every shown fact cited, nothing stale cited
        if not current.facts:
            continue  # no active fact: whatever summary it has stays
        rendered = summary_file(entity.name, render_template(current))
        if existing != rendered:
            tx.write_text(entity.summary_path, rendered)
            refreshed.append(entity.ref)
    return refreshed


def _owner(catalog: EntityCatalog, items_path: str) -> Entity | None:
    """The entity whose `items.json` is at `items_path`, found by its ref (a look-up, not a
    pass over the catalogue)."""
    entry = bucket_entry(items_path)
    if entry is None:
        return None
    entity = catalog.by_ref(LAYOUTS[entry[0]].ref_prefix + entry[1])
    return entity if entity is not None and entity.items_path == items_path else None
