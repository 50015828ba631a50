"""Model calls sent ahead of the chunk being applied (issue 15), with day-by-day results.

A heartbeat applies chunks one by one in chronological order, each seeing what the ones before
it filed. Only the model calls run ahead: while a chunk waits for its answer, up to
`concurrency - 1` following chunks are sent too, each with the context the store offers at that
moment (`Flight.context`). When a chunk's turn to be applied comes, the heartbeat builds its
context again; if a chunk applied meanwhile changed it (a fact of an entity it mentions, a new
entity it names, the agent's skills index), the answer is set aside (it was paid for: its usage
is charged) and the chunk is asked again with the new context. So every answer that is applied
was given for exactly the context one request at a time would have offered.

With `concurrency` 1 there is no thread: a call is made when the heartbeat sends it, as before.
Calls run on worker threads and touch nothing but the extractor (and through it the LLM client);
the state database and the store are only used by the heartbeat's own thread.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk, chunk_to_json
from memoryd.extractors.extract import (
    ChunkContext,
    Extraction,
    Extractor,
    InvalidAnswerError,
    RetryCheck,
    RetryRefusedError,
)
from memoryd.llm.prices import Usage
from memoryd.state.meta import unusable_llm

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.heartbeat.engine import Heartbeat, _Progress

# How far past the chunk being applied a heartbeat looks for chunks to send, per request slot.
LOOK_AHEAD_PER_SLOT = 4
# When the model last gave a valid answer (`model|instant`): within PROVEN_FOR, and with no
# run-level problem recorded since, a heartbeat sends ahead from its first call.
PROVEN_KEY = "llm.last_valid_answer"
PROVEN_FOR = timedelta(hours=1)


@dataclass
class Flight:
    """One chunk's call: what it was sent with, and its outcome (an Extraction, or the error
    the extractor raised)."""

    chunk: Chunk
    plan: str
    context: ChunkContext
    estimate: float | None  # its estimated cost, reserved against the budget while in flight
    future: Future[Extraction]


class Ahead:
    """The calls in flight, by chunk key. `close()` waits for the worker threads (and cancels
    the calls not started); a later `send` starts new ones."""

    def __init__(self, extractor: Extractor, concurrency: int) -> None:
        self._extractor = extractor
        self.concurrency = max(1, concurrency)
        self._pool: ThreadPoolExecutor | None = None
        self._flights: dict[str, Flight] = {}
        # The call taken for its chunk's turn, until its cost is charged (`settle`): still
        # reserved, so that calls sent ahead meanwhile cannot spend the same headroom.
        self._awaited: Flight | None = None

    @property
    def threaded(self) -> bool:
        return self.concurrency > 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def send(
        self,
        chunk: Chunk,
        *,
        plan: str,
        context: ChunkContext,
        estimate: float | None,
        may_retry: RetryCheck,
    ) -> Flight:
        """Send the chunk: on a worker thread, or (concurrency 1) here and now."""
        future: Future[Extraction]
        if self.threaded:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.concurrency, thread_name_prefix="memoryd-llm"
                )
            future = self._pool.submit(self._extractor.extract, chunk, context, may_retry)
        else:
            future = Future()
            try:
                future.set_result(self._extractor.extract(chunk, context, may_retry))
            except Exception as error:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(error)
        flight = Flight(chunk, plan, context, estimate, future)
        self._flights[chunk.key] = flight
        return flight

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

    def holds(self, chunk_key: str) -> bool:
        return chunk_key in self._flights

    @property
    def in_flight(self) -> int:
        return len(self._flights)

    def reserved(self) -> float:
        """The estimated cost of the calls sent and not charged yet."""
        awaited = (self._awaited.estimate or 0.0) if self._awaited is not None else 0.0
        return awaited + sum(flight.estimate or 0.0 for flight in self._flights.values())

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


# -- the heartbeat's side (called on its own thread) --------------------------------------------


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


def retry_check(hb: Heartbeat, estimate: float | None) -> RetryCheck:
    """Whether the corrective retry of a call may be sent, given what its first answer cost.

    On the heartbeat's own thread the budget is asked when the retry is due, as for any call.
    A call on a worker thread cannot read the state database: it gets the headroom the budget
    left when it was sent (the other calls in flight reserved)."""
    budget = hb.budget
    if not hb.ahead.threaded:

        def may_retry(used: Usage) -> bool:
            first = budget.cost_of(used)
            return budget.allows_cost(
                None if estimate is None else estimate + first, hb.report.cost_usd
            )

        return may_retry
    reserved = hb.ahead.reserved()
    spent = hb.report.cost_usd + reserved
    daily = budget.daily_usd - budget.spent_today() - reserved if budget.daily_usd > 0 else math.inf
    run = budget.heartbeat_usd - spent if budget.heartbeat_usd > 0 and spent > 0 else math.inf
    headroom = min(daily, run)

    def may_retry_ahead(used: Usage) -> bool:
        return estimate is None or estimate + budget.cost_of(used) <= headroom

    return may_retry_ahead


def fits_budget(hb: Heartbeat, chunk: Chunk) -> bool:
    """Whether the chunk's call fits both ceilings with the calls in flight counted as spent
    (the per-heartbeat ceiling's first-call exemption only holds with nothing in flight)."""
    estimate = hb.budget.estimate(hb._estimate_input(chunk))
    if estimate is None:
        return True
    reserved = hb.ahead.reserved()
    spent = hb.report.cost_usd
    return hb.budget.allows_cost(estimate + reserved, spent) and (
        reserved <= 0 or hb.budget.allows_cost(estimate, spent + reserved)
    )


def send(hb: Heartbeat, chunk: Chunk, context: ChunkContext) -> Flight:
    """Journal the chunk's plan, then send it (the caller checked the budget)."""
    plan = lean_plan(chunk)
    hb.state.journal.plan(chunk.key, run_id=hb.run_id, plan_json=plan, at=hb.clock())
    estimate = hb.budget.estimate(hb._estimate_input(chunk))
    return hb.ahead.send(
        chunk,
        plan=plan,
        context=context,
        estimate=estimate,
        may_retry=retry_check(hb, estimate),
    )


def send_ahead(
    hb: Heartbeat, upcoming: list[Chunk], session: StoreSession, progress: _Progress
) -> None:
    """Fill the free request slots with the next chunks that will need the model."""
    ahead = hb.ahead
    if not ahead.threaded or hb.report.stopped_early or not hb.llm_proven:
        # Nothing runs ahead before a valid answer has shown that the key, the model and the
        # endpoint work: a run-level problem costs one request, as with one call at a time.
        return
    resend_stale(hb, session)
    for chunk in upcoming[: ahead.concurrency * LOOK_AHEAD_PER_SLOT]:
        if ahead.in_flight >= ahead.concurrency - 1 or hb.should_stop():
            return
        if ahead.holds(chunk.key) or chunk.key in progress.answers:
            continue
        if not _may_go_ahead(hb, chunk, progress):
            continue
        if not fits_budget(hb, chunk):
            return  # the chunk's own turn decides whether the heartbeat stops for the budget
        send(hb, chunk, hb._context(chunk, session))


def resend_stale(hb: Heartbeat, session: StoreSession) -> None:
    """Ask again at once, with the context of now, every call in flight whose context a chunk
    applied since it was sent has changed: its answer could not be used, and waiting for its
    turn to find that out would ask again one chunk at a time. (Its turn checks once more: a
    chunk applied later may change it again.)"""
    for flight in hb.ahead.flights():
        context = hb._context(flight.chunk, session)
        if context == flight.context:
            continue
        if not flight.future.cancel():
            hb._set_aside.append(flight)
        hb.report.chunks_reextracted += 1
        send(hb, flight.chunk, context)


def _may_go_ahead(hb: Heartbeat, chunk: Chunk, progress: _Progress) -> bool:
    if chunk.key in hb.not_ahead:
        return False
    record = hb.state.journal.get(chunk.key)
    if (
        not chunk.has_dialogue
        or (record is not None and record.state != "planned")
        or hb.state.failures.is_quarantined(chunk.key)
    ):
        hb.not_ahead.add(chunk.key)  # for good in this heartbeat
        return False
    return not any(path in progress.held_files for path in chunk.files)


def outcome(flight: Flight) -> tuple[Extraction | None, BaseException | None]:
    """Wait for the call; its extraction, or the error it raised (None, None: cancelled)."""
    if flight.future.cancelled():
        return None, None
    error = flight.future.exception()
    return (None, error) if error is not None else (flight.future.result(), None)


def settle(
    hb: Heartbeat,
    session: StoreSession,
    set_aside: list[Flight],
    chunks: list[Chunk],
    progress: _Progress,
) -> None:
    """Account for every call not applied: those set aside for a changed context and those
    still in flight when the heartbeat stopped sending (a stop, a failure holding their file).
    Each is charged. The answer of the first chunk left unapplied is journalled when it was
    given for the context the store now offers, which is exactly what the next heartbeat would
    offer it, so it is filed then without asking again; a later chunk's context would still
    change with that chunk, so its answer is not kept (it is asked again)."""
    leftovers = {flight.chunk.key: flight for flight in hb.ahead.leftovers()}
    first = next(
        (c for c in chunks if c.key not in progress.answers and c.has_dialogue),
        None,
    )
    keep = leftovers.get(first.key) if first is not None else None
    for flight in [*set_aside, *leftovers.values()]:
        extraction, error = outcome(flight)
        if extraction is None:
            if isinstance(error, (InvalidAnswerError, RetryRefusedError)):
                hb._charge(error.usage, None)
            continue
        if flight is keep and hb._context(flight.chunk, session) == flight.context:
            with hb.state.transaction():
                hb.state.journal.record_answer(
                    flight.chunk.key,
                    answer_json=extraction.answer.model_dump_json(),
                    usage=extraction.usage,
                    model=extraction.model or hb.settings.model,
                    at=hb.clock(),
                )
                hb._charge(extraction.usage, extraction.model)
        else:
            hb._charge(extraction.usage, extraction.model)


def proven_recently(hb: Heartbeat) -> bool:
    """Whether the model gave a valid answer within PROVEN_FOR and no run-level problem is
    recorded: then the heartbeat sends ahead from its first call (a backfill the daemon runs as
    many heartbeats does not wait for one call alone in each)."""
    if unusable_llm(hb.state.meta) is not None:
        return False
    model, _, at = (hb.state.meta.get(PROVEN_KEY) or "").rpartition("|")
    try:
        when = datetime.fromisoformat(at)
    except ValueError:
        return False
    return model == hb.settings.model and timedelta(0) <= hb.clock() - when <= PROVEN_FOR


def note_proven(hb: Heartbeat) -> None:
    """After a heartbeat's first valid answer: the model works (see `proven_recently`)."""
    hb.state.meta.set(PROVEN_KEY, f"{hb.settings.model}|{hb.clock().isoformat()}")
