"""Which calls a heartbeat sends, and when: a chunk's own call, the calls sent ahead of it
(`memoryd.heartbeat.ahead`), and the cost of every call that was not applied.

A chunk's plan is journalled before its call is sent, so that a killed heartbeat knows what it
asked; every answer is journalled and charged the moment it arrives, with a stamp of the
context it was asked with (by the worker that receives it, `memoryd.heartbeat.keeping`), so
that a killed heartbeat pays again only for the calls in flight. Every call is charged, applied
or not; an answer left unapplied is filed by the next heartbeat without asking again when its
context still holds (or can be reconciled).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import (
    ChunkContext,
    Extraction,
    InvalidAnswerError,
    RetryCheck,
    RetryRefusedError,
)
from memoryd.heartbeat.ahead import Flight, lean_plan, outcome
from memoryd.heartbeat.keeping import journal_and_charge
from memoryd.heartbeat.reconcile import Stamp, reconcile, stamp
from memoryd.heartbeat.run import RunBook
from memoryd.llm.prices import Usage
from memoryd.logs import get_logger
from memoryd.store.text import fold

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession

log = get_logger("memoryd.heartbeat.sending")

# How far past the chunk being applied a heartbeat looks for chunks to send, per request slot
# (answers that arrived early wait for their turn journalled, holding no slot).
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
    (the per-heartbeat ceiling's first-call exemption only holds with nothing in flight).
    Answers journalled by their workers are counted first: the ledger already holds them."""
    journal_arrived(run)
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
    flight = run.ahead.send(
        chunk,
        plan=plan,
        context=context,
        estimate=estimate,
        may_retry=retry_check(run, estimate),
        asked_with=stamp(context).to_text(),
    )
    flight.checked = len(run.done)  # asked with the store as these chunks left it
    return flight


def send_ahead(run: RunBook, upcoming: list[Chunk], session: StoreSession) -> None:
    """Fill the free request slots with the next chunks that will need the model."""
    ahead = run.ahead
    journal_arrived(run)
    if not ahead.threaded or run.report.stopped_early or not run.llm_proven:
        # Nothing runs ahead before a valid answer has shown that the key, the model and the
        # endpoint work: a run-level problem costs one request, as with one call at a time.
        return
    recheck_arrived(run, upcoming, session)
    for chunk in upcoming[: ahead.concurrency * LOOK_AHEAD_PER_SLOT]:
        if ahead.in_flight >= ahead.allowed or run.should_stop():
            return
        if ahead.holds(chunk.key) or chunk.key in run.answers:
            continue
        if not _may_go_ahead(run, chunk):
            continue
        if not fits_budget(run, chunk):
            return  # the chunk's own turn decides whether the heartbeat stops for the budget
        send(run, chunk, run.context(chunk, session))


def recheck_arrived(run: RunBook, upcoming: list[Chunk], session: StoreSession) -> None:
    """Ask again at once, with the context of now, an answer that arrived for one of the next
    chunks and would be wrong for the store as it is now (`memoryd.heartbeat.reconcile`):
    found out at its chunk's turn, the call would be made alone, a whole answer's wait on the
    heartbeat's thread. An answer is checked again only after more chunks were applied (the
    store changes only then), and only when one of their answers names something the chunk's
    text names, or files skills or tacit lines (building a context is the costly part: most
    applied chunks concern none of the calls waiting). Its turn checks it in full once more."""
    ahead = run.ahead
    for chunk in upcoming[: ahead.concurrency]:
        flight = ahead.get(chunk.key)
        if flight is None or not flight.journalled or flight.checked == len(run.done):
            continue
        applied = run.done[flight.checked :]
        flight.checked = len(run.done)
        if not _concerns(run, applied, chunk):
            continue
        context = run.context(chunk, session)
        asked = Stamp.from_text(flight.asked_with)
        if asked is not None and asked.digest == stamp(context).digest:
            continue
        if reconcile(flight.future.result().answer, asked, session, chunk.render()) is not None:
            continue
        if not fits_budget(run, chunk):
            return
        log.info("chunk.asked_again", run_id=run.run_id, chunk_key=chunk.key, agent=chunk.agent)
        run.report.chunks_reextracted += 1
        judged(run, stale=True)
        send(run, chunk, context)


def _concerns(run: RunBook, applied: list[str], chunk: Chunk) -> bool:
    """Whether the answers of the `applied` chunks may have changed the chunk's context: one
    names an entity whose name the chunk's text says, or files skills or tacit lines. A cheap
    test for an early check; a changed context it misses is found at the chunk's turn."""
    text: str | None = None
    for key in applied:
        answer = run.answers.get(key)
        if answer is None:
            continue
        if answer.skills or answer.tacit:
            return True
        names = {fact.entity.name for fact in answer.facts} | {e.name for e in answer.entities}
        text = fold(chunk.render()) if text is None else text
        if any(fold(name) in text for name in names):
            return True
    return False


def judged(run: RunBook, *, stale: bool) -> None:
    """The verdict on an answer sent ahead paces the calls sent ahead (`Ahead.judged`)."""
    if run.ahead.judged(stale=stale):
        log.debug("calls.paced", run_id=run.run_id, allowed=run.ahead.allowed, stale=stale)


def journal_arrived(run: RunBook) -> None:
    """Count every answer that has arrived in the report, the moment the heartbeat's thread sees
    it; one its worker could not journal is journalled and charged here (each in its own
    transaction, with what it was asked with). A failed call is left to its chunk's turn (or to
    `settle`)."""
    for flight in run.ahead.arrived():
        if flight.future.cancelled() or flight.future.exception() is not None:
            continue
        journal_answer(run, flight, flight.future.result())


def journal_answer(run: RunBook, flight: Flight, extraction: Extraction) -> None:
    """Journal one call's answer (replacing the answer of a chunk asked again) and charge it;
    an answer its worker journalled (`memoryd.heartbeat.keeping`) is only counted in the report."""
    if flight.receipt.kept:
        run.count_charge(extraction.usage, flight.receipt.cost)
        flight.journalled = True
        return
    cost = journal_and_charge(
        run.budget,
        flight.chunk.key,
        extraction,
        flight.asked_with,
        run_id=run.run_id,
        at=run.clock(),
        model=run.settings.model,
    )
    run.count_charge(extraction.usage, cost)
    flight.journalled = True


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


def settle(run: RunBook) -> None:
    """Account for every call not applied: those still in flight when the heartbeat stopped
    sending (a stop, a failure holding their file). Each is charged, and each answer is
    journalled with what it was asked with: the next heartbeat files it without asking again
    when it still holds for the store's context then, or reconciles it
    (`memoryd.heartbeat.reconcile`)."""
    for flight in run.ahead.leftovers():
        extraction, error = outcome(flight)
        if extraction is None:
            if isinstance(error, (InvalidAnswerError, RetryRefusedError)):
                run.charge(error.usage, None)
            continue
        if not flight.journalled:
            journal_answer(run, flight, extraction)
