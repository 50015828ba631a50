"""Answers journalled on the thread that receives them, before anyone waits for them.

A call sent ahead runs on a worker thread (`memoryd.heartbeat.ahead`) while the heartbeat's own
thread applies earlier chunks. If the answer waited for the heartbeat's thread to journal it, a
heartbeat killed while that thread was busy (applying a long chunk, building a context) would
lose answers that had arrived, and pay for them again. So the worker that receives an answer
journals it at once, with the stamp of what it was asked with, and charges it in the usage
ledger in the same transaction (`Keeper.keep`): from the moment a call's future is done, its
answer is in the state database, and a killed heartbeat pays again only for the calls that were
still in flight.

The workers share one connection of their own to the state database (the heartbeat's thread
keeps its own), opened on first use and used by one worker at a time. SQLite's WAL and busy
timeout order their writes with the heartbeat's. When the connection cannot be opened or the
write fails (the database busy past its timeout, a full disk), the receipt says so and the
heartbeat's thread journals the answer itself when it sees it, as with one call at a time
(`memoryd.heartbeat.sending.journal_answer`): nothing is lost, only the early write.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from memoryd.budget import Budget
from memoryd.extractors.extract import Extraction
from memoryd.logs import get_logger
from memoryd.state.db import DEFAULT_BUSY_TIMEOUT_MS
from memoryd.state.errors import StateError
from memoryd.state.facade import State

log = get_logger("memoryd.heartbeat.keeping")


@dataclass
class Receipt:
    """What the worker that received a call's answer did with it: `kept` once the answer and
    its charge are committed to the state database, with the `cost` the ledger recorded (the
    heartbeat's thread adds it to its report). Read only after the call's future is done."""

    kept: bool = False
    cost: float = 0.0


def journal_and_charge(
    budget: Budget,
    chunk_key: str,
    extraction: Extraction,
    asked_with: str,
    *,
    run_id: str,
    at: datetime,
    model: str,
) -> float:
    """Journal the chunk's answer with what it was asked with (replacing the answer of a chunk
    asked again) and charge it in the usage ledger, in one transaction of the budget's state
    database; return the cost charged. `model` names the call when the answer does not."""
    with budget.state.transaction():
        budget.state.journal.record_answer(
            chunk_key,
            answer_json=extraction.answer.model_dump_json(),
            usage=extraction.usage,
            model=extraction.model or model,
            at=at,
            asked_with=asked_with or None,
            again=True,
        )
        return budget.charge(extraction.usage, extraction.model, job="heartbeat", run_id=run_id)


class Keeper:
    """Journals answers from worker threads through one connection of its own."""

    def __init__(
        self,
        path: Path,
        budget: Budget,
        *,
        run_id: str,
        clock: Callable[[], datetime],
        model: str,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        self._path = path
        self._budget = budget
        self._run_id = run_id
        self._clock = clock
        self._model = model
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._state: State | None = None
        self._unusable = False  # the connection could not be opened: the heartbeat journals

    def keep(self, chunk_key: str, extraction: Extraction, asked_with: str) -> Receipt:
        """Journal the chunk's answer with what it was asked with, and charge it, in one
        transaction (replacing the answer of a chunk asked again)."""
        with self._lock:
            state = self._connected()
            if state is None:
                return Receipt()
            try:
                cost = journal_and_charge(
                    replace(self._budget, state=state),
                    chunk_key,
                    extraction,
                    asked_with,
                    run_id=self._run_id,
                    at=self._clock(),
                    model=self._model,
                )
            except (StateError, sqlite3.Error, OSError) as error:
                log.debug(
                    "chunk.keep_deferred",
                    run_id=self._run_id,
                    chunk_key=chunk_key,
                    error=str(error),
                )
                return Receipt()
            return Receipt(kept=True, cost=cost)

    def close(self) -> None:
        """Close the workers' connection (after they are done); a later `keep` opens it again."""
        with self._lock:
            if self._state is not None:
                self._state.close()
                self._state = None

    def _connected(self) -> State | None:
        if self._state is None and not self._unusable:
            try:
                self._state = State.open(
                    self._path, busy_timeout_ms=self._busy_timeout_ms, any_thread=True
                )
            except (StateError, sqlite3.Error, OSError) as error:
                self._unusable = True
                log.debug("chunk.keep_deferred", run_id=self._run_id, error=str(error))
        return self._state
