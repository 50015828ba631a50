"""The chunk journal that makes a heartbeat safe to kill at any moment (docs/heartbeat.md, step 4).

Each chunk, keyed by a chunk key the pipeline builds (agent, file, byte range, digest), moves
through four states, each recorded before the step it guards:

    planned    its plan (opaque JSON: the pipeline keeps where the chunk is and what it says,
               files, line range and digest, not its text) is known; the model is about to be
               called. Nothing was paid yet.
    answered   the validated answer and its usage are stored, before anything is applied: an
               answer received is never paid for again.
    applied    its answer is being applied by the run named; the writes it leads to are in
               that heartbeat's commit intent (`memoryd.extractors.recovery`), which tells
               memoryd's own half-done writes from edits by others.
    committed  the writes are in a git commit (or there was nothing to commit).

Transitions only go forward (a chunk re-applied after a crash stays `applied`, by the new run).
`plan` never overwrites an answer: planning a chunk that already has one returns the existing
record, so the caller reuses it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast

from memoryd.llm.prices import Usage
from memoryd.state._codec import (
    canonical_json,
    canonicalize_json_text,
    instant_from_text,
    instant_to_text,
    optional_instant,
)
from memoryd.state.db import StateDB
from memoryd.state.errors import JournalStateError

ChunkState = Literal["planned", "answered", "applied", "committed"]


@dataclass(frozen=True)
class ChunkRecord:
    chunk_key: str
    state: ChunkState
    run_id: str  # the run that last moved the chunk
    plan_json: str
    planned_at: datetime
    answer_json: str | None = None
    usage: Usage | None = None
    model: str | None = None
    answered_at: datetime | None = None
    applied_at: datetime | None = None
    committed_at: datetime | None = None
    commit_sha: str | None = None
    # What the answer was asked with: a stamp of the context the model was shown (opaque text
    # the pipeline builds, `memoryd.heartbeat.reconcile`); None before schema version 9.
    asked_with: str | None = None


# A chunk's usage: its four token counts as a JSON array, in this order (schema version 8; an
# object with these keys before it).
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _usage_to_json(usage: Usage) -> str:
    return canonical_json([getattr(usage, field) for field in _USAGE_FIELDS])


def _usage_from_json(text: str | None) -> Usage | None:
    if text is None:
        return None
    value = json.loads(text)
    if isinstance(value, dict):
        return Usage(**value)
    return Usage(**dict(zip(_USAGE_FIELDS, value, strict=True)))


def _chunk(row: sqlite3.Row) -> ChunkRecord:
    return ChunkRecord(
        chunk_key=row["chunk_key"],
        state=cast(ChunkState, row["state"]),
        run_id=row["run_id"],
        plan_json=row["plan_json"],
        planned_at=instant_from_text(row["planned_at"]),
        answer_json=row["answer_json"],
        usage=_usage_from_json(row["usage_json"]),
        model=row["model"],
        answered_at=optional_instant(row["answered_at"]),
        applied_at=optional_instant(row["applied_at"]),
        committed_at=optional_instant(row["committed_at"]),
        commit_sha=row["commit_sha"],
        asked_with=row["asked_with"],
    )


class Journal:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def get(self, chunk_key: str) -> ChunkRecord | None:
        row = self._db.query_one("SELECT * FROM chunks WHERE chunk_key = ?", (chunk_key,))
        return None if row is None else _chunk(row)

    def plan(self, chunk_key: str, *, run_id: str, plan_json: str, at: datetime) -> ChunkRecord:
        """Record that `run_id` is about to call the model for the chunk; return its record.

        A chunk still only planned is re-planned by this run. A chunk with an answer is left as
        it is and its record returned: the caller reuses the answer (or skips a committed chunk)
        instead of calling the model. The run must have been started (`Runs.start`).
        """
        plan = canonicalize_json_text(plan_json, "the chunk plan")
        with self._db.transaction():
            self._db.execute(
                "INSERT INTO chunks (chunk_key, state, run_id, plan_json, planned_at)"
                " VALUES (?, 'planned', ?, ?, ?)"
                " ON CONFLICT (chunk_key) DO UPDATE SET run_id = excluded.run_id,"
                "   plan_json = excluded.plan_json, planned_at = excluded.planned_at"
                " WHERE chunks.state = 'planned'",
                (chunk_key, run_id, plan, instant_to_text(at)),
            )
            record = self.get(chunk_key)
        assert record is not None  # noqa: S101 - inserted or kept just above
        return record

    def answered(self, chunk_key: str) -> ChunkRecord | None:
        """Return the chunk's record if its answer was received (in any later state), else None."""
        record = self.get(chunk_key)
        return record if record is not None and record.answer_json is not None else None

    def record_answer(
        self,
        chunk_key: str,
        *,
        answer_json: str,
        usage: Usage,
        model: str,
        at: datetime,
        asked_with: str | None = None,
        again: bool = False,
    ) -> ChunkRecord:
        """Store the validated answer of a planned chunk the moment it arrives, before it is
        applied, with what it was asked with (`asked_with`).

        With `again`, the answer replaces the one of an answered chunk that was asked again
        because the store changed since (its first answer stays paid for in the ledger).
        Raise JournalStateError unless the chunk is planned (or, `again`, answered). Record the
        call in the usage ledger in the same transaction (`with db.transaction():`) so that both
        or neither stay.
        """
        answer = canonicalize_json_text(answer_json, "the chunk answer")
        return self._advance(
            chunk_key,
            wanted="answered",
            allowed_from=("planned", "answered") if again else ("planned",),
            assignments="answer_json = ?, usage_json = ?, model = ?, answered_at = ?,"
            " asked_with = ?",
            values=(answer, _usage_to_json(usage), model, instant_to_text(at), asked_with),
        )

    def mark_applied(self, chunk_key: str, *, run_id: str, at: datetime) -> ChunkRecord:
        """Record that `run_id` applies the chunk's answer, before its files change.

        An answered chunk becomes applied; an applied one (a crashed apply being redone) gets
        the new run. Raise JournalStateError in any other state.
        """
        return self._advance(
            chunk_key,
            wanted="applied",
            allowed_from=("answered", "applied"),
            assignments="run_id = ?, applied_at = ?",
            values=(run_id, instant_to_text(at)),
        )

    def mark_committed(
        self, chunk_keys: Iterable[str], *, commit_sha: str | None, at: datetime
    ) -> None:
        """Record that the applied chunks' writes are committed (`commit_sha` None: nothing
        changed). All or none: raise JournalStateError if any chunk is not applied."""
        with self._db.transaction():
            for chunk_key in sorted(set(chunk_keys)):
                self._advance(
                    chunk_key,
                    wanted="committed",
                    allowed_from=("applied",),
                    assignments="commit_sha = ?, committed_at = ?",
                    values=(commit_sha, instant_to_text(at)),
                )

    def committed_shas(self) -> list[str]:
        """The distinct commits committed chunks are recorded in (none for a no-op chunk)."""
        rows = self._db.query(
            "SELECT DISTINCT commit_sha FROM chunks WHERE state = 'committed'"
            " AND commit_sha IS NOT NULL ORDER BY commit_sha"
        )
        return [str(row["commit_sha"]) for row in rows]

    def reopen_committed(self, commit_shas: Iterable[str]) -> int:
        """Take the chunks committed in these commits back to `answered`; return how many.

        The one backward move: for a store restored from a backup that lacks those commits, so
        the chunks are filed again from their stored answers, without paying for them again.
        """
        cursor = self._db.execute(
            "UPDATE chunks SET state = 'answered', applied_at = NULL, committed_at = NULL,"
            " commit_sha = NULL WHERE state = 'committed'"
            " AND commit_sha IN (SELECT value FROM json_each(?))",
            (canonical_json(sorted(set(commit_shas))),),
        )
        return cursor.rowcount

    def discard(self, chunk_key: str) -> bool:
        """Forget a chunk in any state (e.g. one quarantined after its answer could not be
        applied). Return whether it was known."""
        cursor = self._db.execute("DELETE FROM chunks WHERE chunk_key = ?", (chunk_key,))
        return cursor.rowcount == 1

    def prune_committed(self, before: datetime) -> int:
        """Delete committed chunks committed before `before`; return how many.

        Only safe for chunks whose cursors have advanced past them: a pruned chunk that is read
        again would be extracted (and paid for) again.
        """
        cursor = self._db.execute(
            "DELETE FROM chunks WHERE state = 'committed' AND committed_at < ?",
            (instant_to_text(before),),
        )
        return cursor.rowcount

    def _advance(
        self,
        chunk_key: str,
        *,
        wanted: ChunkState,
        allowed_from: tuple[ChunkState, ...],
        assignments: str,
        values: tuple[object, ...],
    ) -> ChunkRecord:
        with self._db.transaction():
            current = self._db.scalar("SELECT state FROM chunks WHERE chunk_key = ?", (chunk_key,))
            if current not in allowed_from:
                raise JournalStateError(chunk_key, current, wanted)
            self._db.execute(
                f"UPDATE chunks SET state = ?, {assignments} WHERE chunk_key = ?",  # noqa: S608 - assignments are constants of this module
                (wanted, *values, chunk_key),
            )
            record = self.get(chunk_key)
        assert record is not None  # noqa: S101 - the row exists: its state was just read
        return record
