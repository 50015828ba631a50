"""`State`: the open state database with one accessor per concern, for the pipeline to hold.

`State.open(path)` opens (creating and migrating) `<state dir>/state.db`; the caller passes the
path, since finding the state directory reads the environment and belongs to the entry points.
Concerns that must change together share `state.transaction()`, e.g. storing a chunk's answer
and its usage in the ledger.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from memoryd.state.cursors import Cursors
from memoryd.state.db import DEFAULT_BUSY_TIMEOUT_MS, StateDB
from memoryd.state.failures import Failures
from memoryd.state.journal import Journal
from memoryd.state.mentions import MentionIndex
from memoryd.state.meta import Meta
from memoryd.state.pending import PendingTable
from memoryd.state.rewrites import RewriteTracking
from memoryd.state.runs import Runs
from memoryd.state.usage import UsageLedger

DATABASE_FILE_NAME = "state.db"


@dataclass(frozen=True)
class State:
    db: StateDB
    cursors: Cursors
    mentions: MentionIndex
    pending: PendingTable
    runs: Runs
    journal: Journal
    failures: Failures
    usage: UsageLedger
    rewrites: RewriteTracking
    meta: Meta

    @classmethod
    def open(
        cls, path: Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS, any_thread: bool = False
    ) -> State:
        """Open the state database at `path` (see `StateDB.open` for the errors raised and for
        `any_thread`)."""
        db = StateDB.open(path, busy_timeout_ms=busy_timeout_ms, any_thread=any_thread)
        return cls(
            db=db,
            cursors=Cursors(db),
            mentions=MentionIndex(db),
            pending=PendingTable(db),
            runs=Runs(db),
            journal=Journal(db),
            failures=Failures(db),
            usage=UsageLedger(db),
            rewrites=RewriteTracking(db),
            meta=Meta(db),
        )

    def forget_store(self) -> None:
        """Forget everything learnt about a store (for a database found to belong to another
        one): cursors, pending facts, journal, failures, rewrite tracking, runs and bookkeeping.
        Kept: the usage ledger and the budget's notes (spend is the account's, whatever the
        store) and the full-text index of conversation-days (it is about the transcripts)."""
        with self.transaction():
            for table in (
                "cursors",
                "pending_facts",
                "chunks",
                "chunk_failures",
                "entity_rewrites",
                "rewrite_batches",
                "runs",
            ):
                self.db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
            for key in self.meta.names():
                if not key.startswith("budget."):
                    self.meta.delete(key)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.db.transaction():
            yield

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> State:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
