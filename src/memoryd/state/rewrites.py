"""What the weekly rewrite needs to remember between runs.

Per entity ref: when its summary was last rewritten, a digest of the facts and tiers it was
written from (a different digest means the summary is stale), and the next date on which one of
its facts changes tier, so that the mere passing of days selects exactly the entities whose
summaries must change (`due`). Also the last successful rewrite (for the daemon's catch-up at
start) and the one pending Message Batch with its custom_id -> ref mapping, kept so that a
restart resumes polling the batch instead of paying for it twice. And the answer journal: each
validated summary answer received but not yet committed, with the digest of what was asked, so
a rewrite killed before its commit does not pay for those answers again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime

from memoryd.state._codec import (
    day_from_text,
    day_to_text,
    instant_from_text,
    instant_to_text,
)
from memoryd.state.db import StateDB
from memoryd.state.errors import StateError
from memoryd.state.meta import Meta

LAST_SUCCESS_KEY = "rewrite.last_success"


@dataclass(frozen=True)
class EntityRewrite:
    ref: str
    rewritten_at: datetime
    digest: str
    next_tier_change: date | None  # None: no fact will ever change tier (all cold)


@dataclass(frozen=True)
class PendingBatch:
    batch_id: str
    submitted_at: datetime
    requests: Mapping[str, str]  # custom_id -> entity ref


def _entity(row: sqlite3.Row) -> EntityRewrite:
    change = row["next_tier_change"]
    return EntityRewrite(
        ref=row["ref"],
        rewritten_at=instant_from_text(row["rewritten_at"]),
        digest=row["digest"],
        next_tier_change=None if change is None else day_from_text(change),
    )


class RewriteTracking:
    def __init__(self, db: StateDB) -> None:
        self._db = db
        self._meta = Meta(db)

    # -- the answer journal --------------------------------------------------------------------

    def journal_answer(
        self, ref: str, *, asked_digest: str, body: str, run_id: str, answered_at: datetime
    ) -> None:
        """Keep `ref`'s validated summary answer to the request with `asked_digest` (one per
        ref: a newer answer replaces an older one)."""
        self._db.execute(
            "INSERT INTO rewrite_answers (ref, asked_digest, body, run_id, answered_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (ref) DO UPDATE SET"
            "   asked_digest = excluded.asked_digest, body = excluded.body,"
            "   run_id = excluded.run_id, answered_at = excluded.answered_at",
            (ref, asked_digest, body, run_id, instant_to_text(answered_at)),
        )

    def journalled_answers(self) -> dict[str, tuple[str, str]]:
        """Every journalled answer: ref -> (asked digest, body)."""
        rows = self._db.query("SELECT ref, asked_digest, body FROM rewrite_answers ORDER BY ref")
        return {row["ref"]: (row["asked_digest"], row["body"]) for row in rows}

    def drop_answers(self, refs: Iterable[str]) -> None:
        """Forget the journalled answers of `refs` (their summaries are committed)."""
        self._db.execute_many(
            "DELETE FROM rewrite_answers WHERE ref = ?", [(ref,) for ref in sorted(set(refs))]
        )

    def prune_answers(self, keep: Mapping[str, str]) -> int:
        """Forget every journalled answer but those whose ref and asked digest are in `keep`
        (ref -> asked digest): the others answer a question that is no longer asked. Return
        how many were forgotten."""
        stale = [
            ref for ref, (digest, _) in self.journalled_answers().items() if keep.get(ref) != digest
        ]
        self.drop_answers(stale)
        return len(stale)

    # -- tracking -------------------------------------------------------------------------------

    def get(self, ref: str) -> EntityRewrite | None:
        row = self._db.query_one("SELECT * FROM entity_rewrites WHERE ref = ?", (ref,))
        return None if row is None else _entity(row)

    def all(self) -> dict[str, EntityRewrite]:
        """Every tracked entity by ref (one query: the selection pass reads them all)."""
        rows = self._db.query("SELECT * FROM entity_rewrites ORDER BY ref")
        return {row["ref"]: _entity(row) for row in rows}

    def record(
        self, ref: str, *, rewritten_at: datetime, digest: str, next_tier_change: date | None
    ) -> None:
        """Remember that `ref`'s summary was rewritten from facts and tiers with `digest`."""
        self.record_many([EntityRewrite(ref, rewritten_at, digest, next_tier_change)])

    def record_many(self, rewrites: Iterable[EntityRewrite]) -> None:
        self._db.execute_many(
            "INSERT INTO entity_rewrites (ref, rewritten_at, digest, next_tier_change)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (ref) DO UPDATE SET"
            "   rewritten_at = excluded.rewritten_at, digest = excluded.digest,"
            "   next_tier_change = excluded.next_tier_change",
            [
                (
                    item.ref,
                    instant_to_text(item.rewritten_at),
                    item.digest,
                    None if item.next_tier_change is None else day_to_text(item.next_tier_change),
                )
                for item in sorted(rewrites, key=lambda item: item.ref)
            ],
        )

    def due(self, today: date) -> list[str]:
        """Refs whose next tier change falls on or before `today`, sorted."""
        rows = self._db.query(
            "SELECT ref FROM entity_rewrites WHERE next_tier_change <= ? ORDER BY ref",
            (day_to_text(today),),
        )
        return [row["ref"] for row in rows]

    def last_success(self) -> datetime | None:
        text = self._meta.get(LAST_SUCCESS_KEY)
        return None if text is None else instant_from_text(text)

    def set_last_success(self, at: datetime) -> None:
        self._meta.set(LAST_SUCCESS_KEY, instant_to_text(at))

    def start_batch(
        self, batch_id: str, *, submitted_at: datetime, requests: Mapping[str, str]
    ) -> None:
        """Remember a submitted batch and its custom_id -> ref mapping.

        Raise StateError while another batch is pending: there is one weekly rewrite at a time.
        """
        with self._db.transaction():
            pending = self._db.scalar("SELECT batch_id FROM rewrite_batches LIMIT 1")
            if pending is not None:
                raise StateError(f"rewrite batch {pending!r} is still pending")
            self._db.execute(
                "INSERT INTO rewrite_batches (batch_id, submitted_at) VALUES (?, ?)",
                (batch_id, instant_to_text(submitted_at)),
            )
            self._db.execute_many(
                "INSERT INTO rewrite_batch_requests (batch_id, custom_id, ref) VALUES (?, ?, ?)",
                [(batch_id, custom_id, requests[custom_id]) for custom_id in sorted(requests)],
            )

    def pending_batch(self) -> PendingBatch | None:
        row = self._db.query_one("SELECT batch_id, submitted_at FROM rewrite_batches LIMIT 1")
        if row is None:
            return None
        requests = self._db.query(
            "SELECT custom_id, ref FROM rewrite_batch_requests WHERE batch_id = ?"
            " ORDER BY custom_id",
            (row["batch_id"],),
        )
        return PendingBatch(
            batch_id=row["batch_id"],
            submitted_at=instant_from_text(row["submitted_at"]),
            requests={item["custom_id"]: item["ref"] for item in requests},
        )

    def finish_batch(self, batch_id: str) -> bool:
        """Forget the batch (its results are applied, or it expired). Return whether it was
        pending."""
        cursor = self._db.execute("DELETE FROM rewrite_batches WHERE batch_id = ?", (batch_id,))
        return cursor.rowcount == 1
