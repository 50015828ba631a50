"""The model's answer to one chunk of a heartbeat (`memoryd.heartbeat.engine`).

An answer comes from the journal when it was paid for already, from a call the chunk's group
shared (`memoryd.heartbeat.sharing`), from a call sent ahead whose context still holds, or from
a call made now (`memoryd.heartbeat.sending`); a new answer is journalled and charged before it is
applied. Without an answer the chunk fails, is held back, or the heartbeat stops
(`memoryd.heartbeat.verdicts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import InvalidAnswerError, RetryRefusedError
from memoryd.heartbeat import sending, sharing, verdicts
from memoryd.heartbeat.ahead import Flight, full_plan
from memoryd.heartbeat.run import RunBook
from memoryd.llm.base import PermanentLLMError, TransientLLMError

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.contract import RecordMemories


def answer(
    run: RunBook, chunk: Chunk, session: StoreSession, upcoming: list[Chunk]
) -> RecordMemories | None:
    """The chunk's validated answer: from the journal if already paid for, else the model
    (asked ahead of time, or now; `memoryd.heartbeat.sending`)."""
    handled, shared = sharing.take(run, chunk, session, upcoming)
    if handled:
        return shared  # answered by a call its group shared (or that call failed)
    stored = run.state.journal.answered(chunk.key)
    if stored is not None and stored.answer_json is not None:
        run.report.chunks_reused += 1
        from memoryd.extractors.contract import RecordMemories  # noqa: PLC0415 - see the imports

        return RecordMemories.model_validate_json(stored.answer_json)
    context = run.context(chunk, session)
    flight = run.ahead.take(chunk.key)
    if flight is not None and flight.context != context:
        # Sent ahead, but a chunk applied since changed what it would be shown: ask again.
        if not flight.future.cancel():
            run.set_aside.append(flight)
        run.report.chunks_reextracted += 1
        flight = None
    if flight is None:
        run.ahead.settle()  # a stale call taken above is not this chunk's call any more
        if not sending.fits_budget(run, chunk):
            # Only the per-heartbeat share is used up when the day's budget still allows
            # the call on its own: more is waiting for the next heartbeat.
            estimate = run.estimate(chunk)
            run.report.more_waiting = run.budget.allows_cost(estimate, 0.0)
            run.stop("budget")
            run.hold(chunk)
            return None
        flight = sending.send(run, chunk, context)
        run.ahead.take(chunk.key)  # this chunk's own turn: not in flight for later ones
    sending.send_ahead(run, upcoming, session)
    try:
        return _awaited(run, chunk, flight)
    finally:
        run.ahead.settle()


def _awaited(run: RunBook, chunk: Chunk, flight: Flight) -> RecordMemories | None:
    """The answer of the chunk's call, journalled and charged; None when it failed."""
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
    with run.state.transaction():
        run.state.journal.record_answer(
            chunk.key,
            answer_json=extraction.answer.model_dump_json(),
            usage=extraction.usage,
            model=extraction.model or run.settings.model,
            at=run.clock(),
        )
        run.charge(extraction.usage, extraction.model)
    run.note_extracted(1)
    verdicts.settle_invalid_answers(run)  # the model works: they were the chunks' own
    verdicts.answered(run, valid=True)
    return extraction.answer
