"""Run history: one row per job run (heartbeat, rewrite, ...), for `status` and recovery.

A run is recorded when it starts and completed when it ends. A run with no end is one that was
killed (or is still running); the journal's chunks name the run that last touched them. Outcome
names are the caller's (e.g. "ok", "partial", "failed", "skipped"); counters are stored as
canonical JSON so the same counters are always the same bytes.

Runs are ordered by the sequence they were recorded in (`sequence`, SQLite's rowid), never by
their wall-clock times: after a clock correction a run stamped in the future is still older
than the runs recorded after it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memoryd.state._codec import (
    canonical_json,
    instant_from_text,
    instant_to_text,
    optional_instant,
)
from memoryd.state.db import StateDB
from memoryd.state.errors import StateError

Counter = int | float | str | bool | None


class RunReport(Protocol):
    """What a job's report offers for the record of how its run ended."""

    @property
    def outcome(self) -> str: ...

    @property
    def commit(self) -> str | None: ...

    def log_fields(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    job: str
    started_at: datetime
    finished_at: datetime | None = None
    outcome: str | None = None
    commit_sha: str | None = None
    counters: Mapping[str, Counter] = field(default_factory=dict)
    sequence: int = 0  # the order runs were recorded in

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


def _run(row: sqlite3.Row) -> RunRecord:
    counters = json.loads(row["counters_json"]) if row["counters_json"] else {}
    return RunRecord(
        run_id=row["run_id"],
        job=row["job"],
        started_at=instant_from_text(row["started_at"]),
        finished_at=optional_instant(row["finished_at"]),
        outcome=row["outcome"],
        commit_sha=row["commit_sha"],
        counters=counters,
        sequence=row["sequence"],
    )


class Runs:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def start(self, run_id: str, job: str, started_at: datetime) -> None:
        """Record that run `run_id` of `job` started. Raise StateError if the id is taken."""
        self._db.execute(
            "INSERT INTO runs (run_id, job, started_at) VALUES (?, ?, ?)",
            (run_id, job, instant_to_text(started_at)),
        )

    def finish(
        self,
        run_id: str,
        *,
        finished_at: datetime,
        outcome: str,
        commit_sha: str | None = None,
        counters: Mapping[str, Counter] | None = None,
    ) -> None:
        """Record how run `run_id` ended. Raise StateError for an unknown run."""
        cursor = self._db.execute(
            "UPDATE runs SET finished_at = ?, outcome = ?, commit_sha = ?, counters_json = ?"
            " WHERE run_id = ?",
            (
                instant_to_text(finished_at),
                outcome,
                commit_sha,
                canonical_json(dict(counters or {})),
                run_id,
            ),
        )
        if cursor.rowcount != 1:
            raise StateError(f"no run {run_id!r} was started")

    def finish_report(self, run_id: str, report: RunReport, *, finished_at: datetime) -> None:
        """Record how run `run_id` ended from its job's report: outcome, commit, counters."""
        self.finish(
            run_id,
            finished_at=finished_at,
            outcome=report.outcome,
            commit_sha=report.commit,
            counters=report.log_fields(),
        )

    def get(self, run_id: str) -> RunRecord | None:
        row = self._db.query_one(
            "SELECT rowid AS sequence, * FROM runs WHERE run_id = ?", (run_id,)
        )
        return None if row is None else _run(row)

    def recent(self, job: str | None = None, limit: int = 10) -> list[RunRecord]:
        """The latest runs (of `job`, or of every job), newest first."""
        rows = self._db.query(
            "SELECT rowid AS sequence, * FROM runs WHERE (? IS NULL OR job = ?)"
            " ORDER BY rowid DESC LIMIT ?",
            (job, job, limit),
        )
        return [_run(row) for row in rows]

    def last(self, job: str, outcome: str | None = None) -> RunRecord | None:
        """The latest finished run of `job` (with `outcome`, if given)."""
        row = self._db.query_one(
            "SELECT rowid AS sequence, * FROM runs WHERE job = ? AND finished_at IS NOT NULL"
            " AND (? IS NULL OR outcome = ?) ORDER BY rowid DESC LIMIT 1",
            (job, outcome, outcome),
        )
        return None if row is None else _run(row)

    def unfinished(self, job: str | None = None) -> list[RunRecord]:
        """Runs that started and never finished (killed, or still running), oldest first."""
        rows = self._db.query(
            "SELECT rowid AS sequence, * FROM runs WHERE finished_at IS NULL"
            " AND (? IS NULL OR job = ?) ORDER BY rowid",
            (job, job),
        )
        return [_run(row) for row in rows]
