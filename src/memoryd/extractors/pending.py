"""The heartbeat's view of pending facts: the state database plus this heartbeat's changes.

Pending facts change together with the store: a fact becomes pending when its chunk is applied
and stops being pending when its entity qualifies and it is filed. Both happen inside the
heartbeat's transaction, so they are staged here and written to the database only after the
git commit (`staged_changes` → `write_to`), in the same database transaction that advances the
cursors. A heartbeat killed before that leaves the database as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from memoryd.extractors.apply import PendingRecord
from memoryd.state.pending import PendingTable
from memoryd.store.hosts import PendingEntry
from memoryd.store.text import normalize_statement


def _identity(kind: str, key: str, fact: dict[str, Any]) -> tuple[str, str, str]:
    return kind, key, normalize_statement(str(fact.get("fact", "")))


@dataclass
class PendingOverlay:
    """Implements `apply.PendingFacts` over the state table with staged additions and removals."""

    table: PendingTable
    added: list[PendingRecord] = field(default_factory=list)
    taken_ids: set[int] = field(default_factory=set)

    def add(self, record: PendingRecord) -> bool:
        wanted = _identity(record.kind, record.key, record.fact)
        stored = [
            _identity(item.kind, item.entity_key, json.loads(item.fact_json))
            for item in self.table.for_keys([record.key], record.kind)
            if item.id not in self.taken_ids
        ]
        staged = [_identity(item.kind, item.key, item.fact) for item in self.added]
        if wanted in stored or wanted in staged:
            return False
        self.added.append(record)
        return True

    def take(self, keys: Iterable[str], kind: str) -> list[PendingRecord]:
        wanted = set(keys)
        taken = []
        for item in self.table.for_keys(wanted, kind):
            if item.id in self.taken_ids:
                continue
            self.taken_ids.add(item.id)
            taken.append(
                PendingRecord(
                    entity_name=item.entity_name,
                    kind=item.kind,
                    key=item.entity_key,
                    fact=json.loads(item.fact_json),
                    conversation_date=item.conversation_date,
                    source=json.loads(item.source_json),
                    record_id=item.id,
                )
            )
        kept = []
        for record in self.added:
            if record.kind == kind and record.key in wanted:
                taken.append(record)
            else:
                kept.append(record)
        self.added = kept
        return sorted(taken, key=lambda record: record.conversation_date)

    def entries_after(self) -> list[PendingEntry]:
        """Every pending fact as it will be once this heartbeat's changes are written: the
        table's, less those taken, plus those added (for the host's record in the store)."""
        kept = [
            PendingEntry(
                kind=item.kind,
                key=item.entity_key,
                conversation_date=item.conversation_date,
                entity_name=item.entity_name,
                fact=json.loads(item.fact_json),
                source=json.loads(item.source_json),
            )
            for item in self.table.all()
            if item.id not in self.taken_ids
        ]
        added = [
            PendingEntry(
                kind=r.kind,
                key=r.key,
                conversation_date=r.conversation_date,
                entity_name=r.entity_name,
                fact=r.fact,
                source=r.source,
            )
            for r in self.added
        ]
        return kept + added

    def staged_changes(self) -> dict[str, Any]:
        """The staged changes as JSON-able data (kept in the commit intent for recovery)."""
        return {
            "add": [
                {
                    "entity_name": r.entity_name,
                    "kind": r.kind,
                    "key": r.key,
                    "fact": r.fact,
                    "conversation_date": r.conversation_date.isoformat(),
                    "source": r.source,
                }
                for r in self.added
            ],
            "remove": sorted(self.taken_ids),
        }


def write_pending_changes(table: PendingTable, changes: dict[str, Any]) -> None:
    """Apply staged changes (from `staged_changes`) to the table; the caller holds a transaction.

    Removals go first: a fact taken and then staged again must end up pending, not collide with
    the row it replaces and then be deleted with it."""
    table.remove(changes.get("remove", []))
    for item in changes.get("add", []):
        table.add(
            entity_name=item["entity_name"],
            kind=item["kind"],
            entity_key=item["key"],
            fact_json=json.dumps(item["fact"], sort_keys=True),
            conversation_date=date.fromisoformat(item["conversation_date"]),
            source_json=json.dumps(item["source"], sort_keys=True),
        )
