"""Summaries refreshed by a heartbeat: new facts are visible at once, not after the weekly rewrite.

A heartbeat that changes an entity's `items.json` renders that entity's `summary.md` again with
the deterministic template (`memoryd.rewrite.summary.render_template`: hot facts under "Recent",
then warm ones under "Background", each line citing its fact), in the heartbeat's own commit. The
weekly rewrite still selects the entity (its facts changed since it was last rewritten) and
replaces the template with the model's prose. An entity whose active facts are all cold gets the
same short body the rewrite gives it; one with no active fact keeps whatever summary it has.
Pure over the transaction: the same facts on the same day give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.rewrite.select import read_input
from memoryd.rewrite.summary import all_cold_body, render_template, summary_file
from memoryd.rewrite.tiers import TierRule
from memoryd.store.catalog import EntityCatalog
from memoryd.store.transaction import FileTransaction

log = get_logger(__name__)


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
    by_items = {entity.items_path: entity for entity in catalog.entities()}
    refreshed: list[str] = []
    for path in sorted(set(items_paths)):
        entity = by_items.get(path)
        if entity is None:
            continue
        try:
            current, _ = read_input(tx, entity, today, rule)
        except CorruptFileError as error:
            log.warning("summary.not_refreshed", ref=entity.ref, reason=str(error))
            continue
        if current.facts:
            body = render_template(current)
        elif current.cold_count:
            body = all_cold_body(entity.name)
        else:
            continue
        text = summary_file(entity.name, body)
        if tx.read_text(entity.summary_path) != text:
            tx.write_text(entity.summary_path, text)
            refreshed.append(entity.ref)
    return refreshed
