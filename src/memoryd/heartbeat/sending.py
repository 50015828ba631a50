"""Which calls a heartbeat sends, and when: a chunk's own call, the calls sent ahead of it
(`memoryd.heartbeat.ahead`), and the cost of every call that was not applied.

A chunk's plan is journalled before its call is sent, so that a killed heartbeat knows what it
asked. Every call is charged, applied or not; one answer left unapplied is journalled when it
still holds for the store's context, so the next heartbeat files it without asking again.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import (
    ChunkContext,
    InvalidAnswerError,
    RetryCheck,
    RetryRefusedError,
)
from memoryd.heartbeat.ahead import Flight, lean_plan, outcome
from memoryd.heartbeat.run import RunBook
from memoryd.llm.prices import Usage

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession

# How far past the chunk being applied a heartbeat looks for chunks to send, per request slot.
LOOK_AHEAD_PER_SLOT = 4


def retry_check(run: RunBook, estimate: float | None) -> RetryCheck:
    """Whether the corrective retry of a call may be sent, given what its first answer cost.

    On the heartbeat's own thread the budget is asked when the retry is due, as for any call.
    A call on a worker thread cannot read the state database: it gets the headroom the budget
    left when it was sent (the other calls in flight reserved)."""
    budget = run.budget
    if not run.ahead.threaded:

        def may_retry(used: Usage) -> bool:
            first = budget.cost_of(used)
            return budget.allows_cost(
                None if estimate is None else estimate + first, run.report.cost_usd
            )

        return may_retry
    reserved = run.ahead.reserved()
    spent = run.report.cost_usd + reserved
    daily = budget.daily_usd - budget.spent_today() - reserved if budget.daily_usd > 0 else math.inf
    this_run = budget.heartbeat_usd - spent if budget.heartbeat_usd > 0 and spent > 0 else math.inf
    headroom = min(daily, this_run)

    def may_retry_ahead(used: Usage) -> bool:
        return estimate is None or estimate + budget.cost_of(used) <= headroom

    return may_retry_ahead


def fits_budget(run: RunBook, chunk: Chunk) -> bool:
    """Whether the chunk's call fits both ceilings with the calls in flight counted as spent
    (the per-heartbeat ceiling's first-call exemption only holds with nothing in flight)."""
    estimate = run.estimate(chunk)
    if estimate is None:
        return True
    reserved = run.ahead.reserved()
    spent = run.report.cost_usd
    return run.budget.allows_cost(estimate + reserved, spent) and (
        reserved <= 0 or run.budget.allows_cost(estimate, spent + reserved)
    )


def send(run: RunBook, chunk: Chunk, context: ChunkContext) -> Flight:
    """Journal the chunk's plan, then send it (the caller checked the budget)."""
    plan = lean_plan(chunk)
    run.state.journal.plan(chunk.key, run_id=run.run_id, plan_json=plan, at=run.clock())
    estimate = run.estimate(chunk)
    return run.ahead.send(
        chunk,
        plan=plan,
        context=context,
        estimate=estimate,
        may_retry=retry_check(run, estimate),
    )


def send_ahead(run: RunBook, upcoming: list[Chunk], session: StoreSession) -> None:
    """Fill the free request slots with the next chunks that will need the model."""
    ahead = run.ahead
    if not ahead.threaded or run.report.stopped_early or not run.llm_proven:
        # Nothing runs ahead before a valid answer has shown that the key, the model and the
        # endpoint work: a run-level problem costs one request, as with one call at a time.
        return
    resend_stale(run, session)
    for chunk in upcoming[: ahead.concurrency * LOOK_AHEAD_PER_SLOT]:
        if ahead.in_flight >= ahead.concurrency - 1 or run.should_stop():
            return
        if ahead.holds(chunk.key) or chunk.key in run.answers:
            continue
        if not _may_go_ahead(run, chunk):
            continue
        if not fits_budget(run, chunk):
            return  # the chunk's own turn decides whether the heartbeat stops for the budget
        send(run, chunk, run.context(chunk, session))


def resend_stale(run: RunBook, session: StoreSession) -> None:
    """Ask again at once, with the context of now, every call in flight whose context a chunk
    applied since it was sent has changed: its answer could not be used, and waiting for its
    turn to find that out would ask again one chunk at a time. (Its turn checks once more: a
    chunk applied later may change it again.)"""
    for flight in run.ahead.flights():
        context = run.context(flight.chunk, session)
        if context == flight.context:
            continue
        if not flight.future.cancel():
            run.set_aside.append(flight)
        run.report.chunks_reextracted += 1
        send(run, flight.chunk, context)


def _may_go_ahead(run: RunBook, chunk: Chunk) -> bool:
    if chunk.key in run.not_ahead:
        return False
    record = run.state.journal.get(chunk.key)
    if (
        not chunk.has_dialogue
        or (record is not None and record.state != "planned")
        or run.state.failures.is_quarantined(chunk.key)
    ):
        run.not_ahead.add(chunk.key)  # for good in this heartbeat
        return False
    return not any(path in run.held_files for path in chunk.files)


def settle(
    run: RunBook,
    session: StoreSession,
    chunks: list[Chunk],
) -> None:
    """Account for every call not applied: those set aside for a changed context and those
    still in flight when the heartbeat stopped sending (a stop, a failure holding their file).
    Each is charged. The answer of the first chunk left unapplied is journalled when it was
    given for the context the store now offers, which is exactly what the next heartbeat would
    offer it, so it is filed then without asking again; a later chunk's context would still
    change with that chunk, so its answer is not kept (it is asked again)."""
    leftovers = {flight.chunk.key: flight for flight in run.ahead.leftovers()}
    first = next(
        (c for c in chunks if c.key not in run.answers and c.has_dialogue),
        None,
    )
    keep = leftovers.get(first.key) if first is not None else None
    set_aside, run.set_aside = run.set_aside, []
    for flight in [*set_aside, *leftovers.values()]:
        extraction, error = outcome(flight)
        if extraction is None:
            if isinstance(error, (InvalidAnswerError, RetryRefusedError)):
                run.charge(error.usage, None)
            continue
        if flight is keep and run.context(flight.chunk, session) == flight.context:
            with run.state.transaction():
                run.state.journal.record_answer(
                    flight.chunk.key,
                    answer_json=extraction.answer.model_dump_json(),
                    usage=extraction.usage,
                    model=extraction.model or run.settings.model,
                    at=run.clock(),
                )
                run.charge(extraction.usage, extraction.model)
        else:
            run.charge(extraction.usage, extraction.model)
