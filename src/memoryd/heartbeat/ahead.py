"""Model calls sent ahead of the chunk being applied, and what the journal keeps of a chunk.

A heartbeat applies chunks one by one in chronological order, each seeing what the ones before
it filed. Only the model calls run ahead: while a chunk waits for its answer, up to
`concurrency - 1` following chunks are sent too, each with the context the store offers at that
moment (`Flight.context`, and its stamp `Flight.asked_with`). Each answer is journalled by the
worker that receives it, before its future is done (`memoryd.heartbeat.keeping`), and counted in
the heartbeat's report when its thread sees it (`memoryd.heartbeat.sending.journal_arrived`). When
a chunk's turn to be applied comes,
the heartbeat builds its context again; if a chunk applied meanwhile changed it, the answer is
reconciled by code, or asked again only when it would be wrong (`memoryd.heartbeat.reconcile`).

With `concurrency` 1 there is no thread: a call is made when the heartbeat sends it, as before.
Calls run on worker threads and touch nothing but the extractor (and through it the LLM client)
and the keeper's own connection to the state database; the store and the heartbeat's connection
are only used by the heartbeat's own thread. This module keeps
the calls themselves; deciding what to send and settling their cost is `memoryd.heartbeat.sending`.
"""

from __future__ import annotations

import json
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from memoryd.extractors.chunking import Chunk, chunk_to_json
from memoryd.extractors.extract import (
    ChunkContext,
    Extraction,
    Extractor,
    RetryCheck,
)
from memoryd.heartbeat.keeping import Keeper, Receipt


@dataclass
class Flight:
    """One chunk's call: what it was sent with, and its outcome (an Extraction, or the error
    the extractor raised)."""

    chunk: Chunk
    plan: str
    context: ChunkContext
    estimate: float | None  # its estimated cost, reserved against the budget while in flight
    future: Future[Extraction]
    asked_with: str = ""  # the stamp of `context` the journal keeps with its answer
    journalled: bool = False  # its answer is journalled and charged (on arrival)
    checked: int = 0  # chunks applied when it was sent, or its answer last checked
    receipt: Receipt = field(default_factory=Receipt)  # journalled by the worker that received it


class Ahead:
    """The calls in flight, by chunk key. `close()` waits for the worker threads (and cancels
    the calls not started); a later `send` starts new ones."""

    def __init__(
        self, extractor: Extractor, concurrency: int, keeper: Keeper | None = None
    ) -> None:
        self._extractor = extractor
        self.concurrency = max(1, concurrency)
        self._keeper = keeper  # journals answers on the workers (else the heartbeat's thread)
        self.allowed = self.concurrency  # calls in flight at once for now (`judged`)
        self._right = 0  # answers sent ahead found right in a row since `allowed` last changed
        self._pool: ThreadPoolExecutor | None = None
        self._flights: dict[str, Flight] = {}
        # The call taken for its chunk's turn, until its cost is charged (`settle`): still
        # reserved, so that calls sent ahead meanwhile cannot spend the same headroom.
        self._awaited: Flight | None = None

    def judged(self, *, stale: bool) -> bool:
        """An answer sent ahead was found at its chunk's turn either stale (asked again: paid
        twice) or right (as given, or reconciled by code). A stale one halves the calls allowed
        in flight; as many right ones in a row as are allowed add one back, up to `concurrency`.
        Where chunks keep changing each other's context (updates of the same few things), a
        heartbeat sends fewer ahead and pays for fewer answers twice; where they do not, it
        keeps them all in flight. Return whether `allowed` changed."""
        before = self.allowed
        if stale:
            self.allowed, self._right = max(1, self.allowed // 2), 0
        else:
            self._right += 1
            if self._right >= self.allowed and self.allowed < self.concurrency:
                self.allowed, self._right = self.allowed + 1, 0
        return self.allowed != before

    @property
    def threaded(self) -> bool:
        return self.concurrency > 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._keeper is not None:
            self._keeper.close()

    def send(
        self,
        chunk: Chunk,
        *,
        plan: str,
        context: ChunkContext,
        estimate: float | None,
        may_retry: RetryCheck,
        asked_with: str = "",
    ) -> Flight:
        """Send the chunk: on a worker thread, or (concurrency 1) here and now."""
        future: Future[Extraction]
        receipt = Receipt()
        if self.threaded:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.concurrency, thread_name_prefix="memoryd-llm"
                )
            future = self._pool.submit(
                self._call, chunk, context, may_retry, asked_with=asked_with, receipt=receipt
            )
        else:
            future = Future()
            try:
                future.set_result(self._extractor.extract(chunk, context, may_retry))
            except Exception as error:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(error)
        flight = Flight(chunk, plan, context, estimate, future, asked_with, receipt=receipt)
        self._flights[chunk.key] = flight
        return flight

    def _call(
        self,
        chunk: Chunk,
        context: ChunkContext,
        may_retry: RetryCheck,
        *,
        asked_with: str,
        receipt: Receipt,
    ) -> Extraction:
        """A worker's call: the answer, journalled before the future that returns it is done."""
        extraction = self._extractor.extract(chunk, context, may_retry)
        if self._keeper is not None:
            kept = self._keeper.keep(chunk.key, extraction, asked_with)
            receipt.kept, receipt.cost = kept.kept, kept.cost
        return extraction

    def arrived(self) -> list[Flight]:
        """The calls in flight (the taken one too) whose answer arrived and is not journalled
        yet, oldest first."""
        flights = [*self._flights.values()]
        if self._awaited is not None:
            flights.insert(0, self._awaited)
        return [f for f in flights if not f.journalled and f.future.done()]

    def wait_any(self, flight: Flight) -> None:
        """Block until `flight` or any other call still in flight is done (one that failed,
        left unjournalled for its chunk's turn, is not waited for again)."""
        waiting = [f.future for f in self._flights.values() if not f.future.done()]
        wait([flight.future, *waiting], return_when=FIRST_COMPLETED)

    def take(self, chunk_key: str) -> Flight | None:
        """The chunk's call, if it was sent: no longer in flight for the caller, but still
        reserved against the budget until `settle`."""
        flight = self._flights.pop(chunk_key, None)
        if flight is not None:
            self._awaited = flight
        return flight

    def settle(self) -> None:
        """The taken call's cost is charged (or it failed): its reservation ends."""
        self._awaited = None

    def flights(self) -> list[Flight]:
        """The calls in flight, oldest first."""
        return list(self._flights.values())

    def get(self, chunk_key: str) -> Flight | None:
        """The chunk's call in flight (or answered, waiting for its turn), if any."""
        return self._flights.get(chunk_key)

    def holds(self, chunk_key: str) -> bool:
        return chunk_key in self._flights

    @property
    def in_flight(self) -> int:
        """The calls sent and not answered yet, the taken one included: an answer that arrived
        and waits for its chunk's turn (journalled) holds no request slot."""
        flights = [*self._flights.values()]
        if self._awaited is not None:
            flights.append(self._awaited)
        return sum(1 for flight in flights if not flight.future.done())

    def reserved(self) -> float:
        """The estimated cost of the calls sent and not charged yet."""
        flights = [*self._flights.values()]
        if self._awaited is not None:
            flights.append(self._awaited)
        return sum(flight.estimate or 0.0 for flight in flights if not flight.journalled)

    def leftovers(self) -> list[Flight]:
        """Every call not taken, oldest first, waited for (the caller settles their cost)."""
        flights = list(self._flights.values())
        self._flights.clear()
        for flight in flights:
            _wait(flight.future)
        return flights


def _wait(future: Future[Extraction]) -> None:
    if not future.cancelled():
        future.exception()  # blocks until done; the error itself is read by the caller


def lean_plan(chunk: Chunk) -> str:
    """What the journal keeps of a chunk it is about to send: where it is and what it says
    (files, line range, digest), not its text. The text stays in the transcript; a chunk that
    fails keeps its whole plan in the failure record instead (`memoryd retry` needs it).
    `from` and `to` name their file by its position in `files` (a path is written once)."""
    first, last = chunk.turns[0].provenance, chunk.turns[-1].provenance
    files = chunk.files
    return json.dumps(
        {
            "agent": chunk.agent,
            "session_id": chunk.session_id,
            "day": chunk.day.isoformat(),
            "part": chunk.part,
            "files": list(files),
            "from": [files.index(first.file), first.lines[0]],
            "to": [files.index(last.file), last.lines[1]],
            "digest": chunk.digest,
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def full_plan(chunk: Chunk) -> str:
    """The whole chunk as JSON (for a failure record: a requeued chunk is rebuilt from it)."""
    return json.dumps(chunk_to_json(chunk), sort_keys=True)


def outcome(flight: Flight) -> tuple[Extraction | None, BaseException | None]:
    """Wait for the call; its extraction, or the error it raised (None, None: cancelled)."""
    if flight.future.cancelled():
        return None, None
    error = flight.future.exception()
    return (None, error) if error is not None else (flight.future.result(), None)
