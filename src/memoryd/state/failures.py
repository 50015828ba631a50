"""Failed chunks and quarantine (docs/heartbeat.md): a chunk that fails in 3 heartbeats is set
aside.

A chunk's failures are counted once per run however often it fails within that run (an invalid
answer retried within a heartbeat is one failure). At the threshold the chunk is quarantined:
`status` lists it with its last error, and the pipeline reads past it. `retry` requeues every
quarantined chunk: its count starts again from zero and it is marked requeued, so the next
heartbeat can re-read it from its stored plan (file, byte range) although the cursor has moved
on. A chunk that succeeds is cleared.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime

from memoryd.state._codec import (
    canonicalize_json_text,
    instant_from_text,
    instant_to_text,
    optional_instant,
)
from memoryd.state.db import StateDB

DEFAULT_QUARANTINE_THRESHOLD = 3
# A traceback-sized message is useless in `status` and bloats the table.
MAX_ERROR_CHARS = 2_000


@dataclass(frozen=True)
class FailureRecord:
    chunk_key: str
    failures: int
    last_error: str
    last_run_id: str
    last_failed_at: datetime
    plan_json: str
    quarantined_at: datetime | None = None
    requeued_at: datetime | None = None
    # Only on the record `record_failure` returns: whether that very call quarantined the chunk,
    # so the caller logs `chunk.quarantined` exactly once.
    newly_quarantined: bool = False

    @property
    def quarantined(self) -> bool:
        return self.quarantined_at is not None


def _failure(row: sqlite3.Row, newly_quarantined: bool = False) -> FailureRecord:
    return FailureRecord(
        chunk_key=row["chunk_key"],
        failures=row["failures"],
        last_error=row["last_error"],
        last_run_id=row["last_run_id"],
        last_failed_at=instant_from_text(row["last_failed_at"]),
        plan_json=row["plan_json"],
        quarantined_at=optional_instant(row["quarantined_at"]),
        requeued_at=optional_instant(row["requeued_at"]),
        newly_quarantined=newly_quarantined,
    )


class Failures:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def get(self, chunk_key: str) -> FailureRecord | None:
        row = self._db.query_one(
            "SELECT * FROM chunk_failures WHERE chunk_key = ?",
            (chunk_key,),
        )
        return None if row is None else _failure(row)

    def record_failure(
        self,
        chunk_key: str,
        *,
        run_id: str,
        error: str,
        plan_json: str,
        at: datetime,
        threshold: int = DEFAULT_QUARANTINE_THRESHOLD,
    ) -> FailureRecord:
        """Count a failure of the chunk in run `run_id` (once per run); quarantine it when the
        count reaches `threshold`. Return the chunk's record after the change."""
        plan = canonicalize_json_text(plan_json, "the chunk plan")
        message = error[:MAX_ERROR_CHARS]
        moment = instant_to_text(at)
        with self._db.transaction():
            self._db.execute(
                "INSERT INTO chunk_failures (chunk_key, failures, last_error, last_run_id,"
                " last_failed_at, plan_json) VALUES (?, 1, ?, ?, ?, ?)"
                " ON CONFLICT (chunk_key) DO UPDATE SET"
                "   failures = failures + (last_run_id != excluded.last_run_id),"
                "   last_error = excluded.last_error, last_run_id = excluded.last_run_id,"
                "   last_failed_at = excluded.last_failed_at, plan_json = excluded.plan_json",
                (chunk_key, message, run_id, moment, plan),
            )
            cursor = self._db.execute(
                "UPDATE chunk_failures SET quarantined_at = ?"
                " WHERE chunk_key = ? AND quarantined_at IS NULL AND failures >= ?",
                (moment, chunk_key, threshold),
            )
            row = self._db.query_one(
                "SELECT * FROM chunk_failures WHERE chunk_key = ?",
                (chunk_key,),
            )
        assert row is not None  # noqa: S101 - upserted just above
        return _failure(row, newly_quarantined=cursor.rowcount == 1)

    def is_quarantined(self, chunk_key: str) -> bool:
        return bool(
            self._db.scalar(
                "SELECT 1 FROM chunk_failures WHERE chunk_key = ? AND quarantined_at IS NOT NULL",
                (chunk_key,),
            )
        )

    def quarantined(self) -> list[FailureRecord]:
        """Every quarantined chunk with its last error, oldest quarantine first."""
        rows = self._db.query(
            "SELECT * FROM chunk_failures WHERE quarantined_at IS NOT NULL"
            " ORDER BY quarantined_at, chunk_key"
        )
        return [_failure(row) for row in rows]

    def failing(self) -> list[FailureRecord]:
        """Chunks that failed but are not quarantined (yet), by chunk key."""
        rows = self._db.query(
            "SELECT * FROM chunk_failures WHERE quarantined_at IS NULL ORDER BY chunk_key"
        )
        return [_failure(row) for row in rows]

    def requeue_all(self, at: datetime) -> int:
        """Put every quarantined chunk back in the queue (the `retry` command): its count
        restarts and it is marked requeued. Return how many were requeued."""
        cursor = self._db.execute(
            "UPDATE chunk_failures SET quarantined_at = NULL, failures = 0, requeued_at = ?"
            " WHERE quarantined_at IS NOT NULL",
            (instant_to_text(at),),
        )
        return cursor.rowcount

    def requeued(self) -> list[FailureRecord]:
        """Chunks `retry` put back and not yet cleared, oldest failure first, with their plans."""
        rows = self._db.query(
            "SELECT * FROM chunk_failures"
            " WHERE requeued_at IS NOT NULL AND quarantined_at IS NULL"
            " ORDER BY last_failed_at, chunk_key"
        )
        return [_failure(row) for row in rows]

    def clear(self, chunk_key: str) -> bool:
        """Forget the chunk's failures (it succeeded). Return whether there were any."""
        cursor = self._db.execute("DELETE FROM chunk_failures WHERE chunk_key = ?", (chunk_key,))
        return cursor.rowcount == 1
