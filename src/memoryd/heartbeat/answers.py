"""The model's answer to one chunk of a heartbeat (`memoryd.heartbeat.engine`).

An answer comes from a call the chunk's group shared (`memoryd.heartbeat.sharing`), from the
journal (an earlier heartbeat paid for it), from a call sent ahead, or from a call made now
(`memoryd.heartbeat.sending`). While the heartbeat waits for the chunk's call, every other answer
that arrives is journalled and charged at once (`sending.journal_arrived`).

An answer given for a context the store has changed since (chunks applied meanwhile) is
reconciled by code (`memoryd.heartbeat.reconcile`); the chunk is asked again only when the answer
would be wrong. Without an answer the chunk fails, is held back, or the heartbeat stops
(`memoryd.heartbeat.verdicts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import Extraction, InvalidAnswerError, RetryRefusedError
from memoryd.heartbeat import sending, sharing, verdicts
from memoryd.heartbeat.ahead import Flight, full_plan
from memoryd.heartbeat.reconcile import Stamp, reconcile, stamp
from memoryd.heartbeat.run import RunBook
from memoryd.llm.base import PermanentLLMError, TransientLLMError
from memoryd.logs import get_logger

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.contract import RecordMemories

log = get_logger("memoryd.heartbeat.answers")


def answer(
    run: RunBook, chunk: Chunk, session: StoreSession, upcoming: list[Chunk]
) -> RecordMemories | None:
    """The chunk's validated answer, made right for the store as it is now: from the journal if
    already paid for, else the model (asked ahead of time, or now)."""
    handled, shared, stale = sharing.take(run, chunk, session, upcoming)
    if handled:
        # Answered by a call its group shared (or that call failed); when chunks of other
        # agents were applied since that call, checked as an answer sent ahead is.
        if shared is not None and stale is not None:
            shared = _holding(run, chunk, session, upcoming, given=shared, asked_with=stale)
        return shared
    flight = run.ahead.take(chunk.key)
    sent_ahead = flight is not None
    if flight is None:
        stored = run.state.journal.answered(chunk.key)
        if stored is not None and stored.answer_json is not None:
            run.report.chunks_reused += 1
            from memoryd.extractors.contract import RecordMemories  # noqa: PLC0415

            given = RecordMemories.model_validate_json(stored.answer_json)
            if stored.asked_with is None:
                return given  # journalled before answers kept what they were asked with
            return _holding(
                run, chunk, session, upcoming, given=given, asked_with=stored.asked_with
            )
        flight = _send_now(run, chunk, session)
        if flight is None:
            return None
    sending.send_ahead(run, upcoming, session)
    try:
        extraction = _awaited(run, chunk, flight, refill=(upcoming, session))
    finally:
        run.ahead.settle()
    if extraction is None:
        return None
    return _holding(
        run,
        chunk,
        session,
        upcoming,
        given=extraction.answer,
        asked_with=flight.asked_with,
        sent_ahead=sent_ahead,
    )


def _send_now(run: RunBook, chunk: Chunk, session: StoreSession) -> Flight | None:
    """Send the chunk's call for its own turn, with the context of now; None when the budget
    stops the heartbeat."""
    if not sending.fits_budget(run, chunk):
        # Only the per-heartbeat share is used up when the day's budget still allows
        # the call on its own: more is waiting for the next heartbeat.
        estimate = run.estimate(chunk)
        run.report.more_waiting = run.budget.allows_cost(estimate, 0.0)
        run.stop("budget")
        run.hold(chunk)
        return None
    flight = sending.send(run, chunk, run.context(chunk, session))
    run.ahead.take(chunk.key)  # this chunk's own turn: not in flight for later ones
    return flight


def _holding(
    run: RunBook,
    chunk: Chunk,
    session: StoreSession,
    upcoming: list[Chunk],
    *,
    given: RecordMemories,
    asked_with: str,
    sent_ahead: bool = False,
) -> RecordMemories | None:
    """The answer as it holds for the store now: as given when its context did not change,
    reconciled by code when it can be, else the chunk's answer asked again. The verdict on an
    answer `sent_ahead` of its chunk's turn paces the calls sent ahead."""
    now = stamp(run.context(chunk, session))
    asked = Stamp.from_text(asked_with)
    if asked is not None and asked.digest == now.digest:
        if sent_ahead:
            sending.judged(run, stale=False)
        return given
    reconciled = reconcile(given, asked, session, chunk.render())
    if sent_ahead:
        sending.judged(run, stale=reconciled is None)
    if reconciled is not None:
        log.debug(
            "chunk.reconciled",
            run_id=run.run_id,
            chunk_key=chunk.key,
            dropped=reconciled.dropped,
            redirected=reconciled.redirected,
        )
        return reconciled.answer
    log.info("chunk.asked_again", run_id=run.run_id, chunk_key=chunk.key, agent=chunk.agent)
    run.report.chunks_reextracted += 1
    flight = _send_now(run, chunk, session)
    if flight is None:
        return None
    sending.send_ahead(run, upcoming, session)
    try:
        extraction = _awaited(run, chunk, flight, refill=(upcoming, session), again=True)
    finally:
        run.ahead.settle()
    # Nothing was applied while it was asked: it holds for the context it was sent with.
    return None if extraction is None else extraction.answer


def _awaited(
    run: RunBook,
    chunk: Chunk,
    flight: Flight,
    *,
    refill: tuple[list[Chunk], StoreSession],
    again: bool = False,
) -> Extraction | None:
    """The outcome of the chunk's call, journalled and charged (with every other answer that
    arrives meanwhile, each slot it frees filled at once with the next chunk of `refill`'s);
    None when it failed. A chunk asked `again` counts as re-extracted, not as one more chunk
    extracted."""
    upcoming, session = refill
    while not flight.future.done():
        run.ahead.wait_any(flight)
        sending.journal_arrived(run)
        if not flight.future.done():
            sending.send_ahead(run, upcoming, session)
    sending.journal_arrived(run)
    try:
        extraction = flight.future.result()
    except RetryRefusedError as error:
        run.charge(error.usage, None)
        run.stop("budget")
        run.hold(chunk)
        return None
    except (InvalidAnswerError, TransientLLMError, PermanentLLMError) as error:
        # The failure record keeps the whole chunk (`memoryd retry` rebuilds it from there).
        verdicts.extraction_failed(run, chunk, full_plan(chunk), error)
        return None
    if not flight.journalled:
        sending.journal_answer(run, flight, extraction)
    if not again:
        run.note_extracted(1)
    verdicts.settle_invalid_answers(run)  # the model works: they were the chunks' own
    verdicts.answered(run, valid=True)
    return extraction
