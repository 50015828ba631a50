"""Pending facts: facts of entities that have not qualified for a folder yet (docs/store-format.md,
Creating entities).

A fact whose entity does not qualify is written to the daily note and kept here; when the entity
later qualifies, the pipeline lists its pending facts (by the entity's normalized keys: its name
and aliases, normalized by the caller), files them, and removes them.

Invariants: the fact and its source are stored as canonical JSON; the same fact for the same
entity (kind, normalized key, canonical fact JSON) is stored once however often it is added, so
re-applying a chunk after a crash adds nothing. Listing is in a stable order (conversation date,
then insertion), which is the order the facts happened in.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from memoryd.state._codec import canonical_json, canonicalize_json_text, day_from_text, day_to_text
from memoryd.state.db import StateDB


@dataclass(frozen=True)
class PendingRow:
    """A fact waiting in the state database for its entity to qualify."""

    id: int
    entity_name: str
    kind: str
    entity_key: str
    fact_json: str
    conversation_date: date
    source_json: str


@dataclass(frozen=True)
class PendingEntity:
    """One entity waiting to qualify, for `status`."""

    kind: str
    entity_key: str
    entity_name: str  # as first reported
    facts: int
    first_date: date


def _fact(row: sqlite3.Row) -> PendingRow:
    return PendingRow(
        id=row["id"],
        entity_name=row["entity_name"],
        kind=row["kind"],
        entity_key=row["entity_key"],
        fact_json=row["fact_json"],
        conversation_date=day_from_text(row["conversation_date"]),
        source_json=row["source_json"],
    )


class PendingTable:
    """The pending facts of the state database (docs/store-format.md, Creating entities)."""

    def __init__(self, db: StateDB) -> None:
        self._db = db

    def add(
        self,
        *,
        entity_name: str,
        kind: str,
        entity_key: str,
        fact_json: str,
        conversation_date: date,
        source_json: str,
    ) -> bool:
        """Keep a fact as pending. Return False when the same fact was already pending.

        Raise StateValueError if `fact_json` or `source_json` is not valid JSON.
        """
        fact = canonicalize_json_text(fact_json, "the pending fact")
        source = canonicalize_json_text(source_json, "the pending fact's source")
        digest = hashlib.sha256(fact.encode("utf-8")).hexdigest()
        cursor = self._db.execute(
            "INSERT INTO pending_facts (entity_name, kind, entity_key, fact_json, fact_digest,"
            " conversation_date, source_json) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (kind, entity_key, fact_digest) DO NOTHING",
            (entity_name, kind, entity_key, fact, digest, day_to_text(conversation_date), source),
        )
        return cursor.rowcount == 1

    def for_keys(self, entity_keys: Iterable[str], kind: str | None = None) -> list[PendingRow]:
        """Return the pending facts of entities with any of the normalized keys (of any kind,
        or of `kind` only), oldest conversation first."""
        keys = sorted(set(entity_keys))
        rows = self._db.query(
            "SELECT * FROM pending_facts"
            " WHERE entity_key IN (SELECT value FROM json_each(?)) AND (? IS NULL OR kind = ?)"
            " ORDER BY conversation_date, id",
            (canonical_json(keys), kind, kind),
        )
        return [_fact(row) for row in rows]

    def all(self) -> list[PendingRow]:
        return [
            _fact(row)
            for row in self._db.query("SELECT * FROM pending_facts ORDER BY conversation_date, id")
        ]

    def entities(self) -> list[PendingEntity]:
        """Summarize the pending entities: one per (kind, key), ordered by kind and key."""
        rows = self._db.query(
            "SELECT kind, entity_key, count(*) AS facts, min(conversation_date) AS first_date,"
            " (SELECT p.entity_name FROM pending_facts AS p WHERE p.kind = f.kind"
            "   AND p.entity_key = f.entity_key ORDER BY p.id LIMIT 1) AS entity_name"
            " FROM pending_facts AS f GROUP BY kind, entity_key ORDER BY kind, entity_key"
        )
        return [
            PendingEntity(
                kind=row["kind"],
                entity_key=row["entity_key"],
                entity_name=row["entity_name"],
                facts=row["facts"],
                first_date=day_from_text(row["first_date"]),
            )
            for row in rows
        ]

    def clear(self) -> int:
        """Forget every pending fact (before they are rebuilt from the store); return how many."""
        return self._db.execute("DELETE FROM pending_facts").rowcount

    def remove(self, fact_ids: Iterable[int]) -> int:
        """Delete filed facts by id; return how many were deleted."""
        cursor = self._db.execute(
            "DELETE FROM pending_facts WHERE id IN (SELECT value FROM json_each(?))",
            (canonical_json(sorted(set(fact_ids))),),
        )
        return cursor.rowcount
