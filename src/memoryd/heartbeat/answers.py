"""The model's answer to one chunk of a heartbeat (`memoryd.heartbeat.engine`), and what a
missing answer means.

An answer comes from the journal when it was paid for already, from a call the chunk's group
shared (`memoryd.heartbeat.sharing`), from a call sent ahead whose context still holds, or from
a call made now (`memoryd.heartbeat.ahead`); a new answer is journalled and charged before it is
applied. Without an answer the chunk fails, is held back, or the heartbeat stops.

A run-level failure (`UnusableLLMError`: the key refused, the model retired, no credit, the
endpoint's size limit, or `INVALID_ANSWER_STREAK` invalid answers in a row, which show that the
model itself cannot do the task) stops the heartbeat as a transient failure does (what was applied
is committed, the rest waits), but counts against no chunk: invalid answers are held back until a
valid one proves the model works (then they are the chunks' own failures, as they are when the
heartbeat ends short of a streak), and a streak drops them. The problem is recorded in the state
database for `status` until an answer disproves it, and logged as `llm.unusable` when it appears or
changes and at most once an hour while it lasts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import InvalidAnswerError, RetryRefusedError
from memoryd.heartbeat import ahead as sending
from memoryd.heartbeat import sharing
from memoryd.heartbeat.ahead import Flight
from memoryd.llm.base import PermanentLLMError, TransientLLMError, UnusableLLMError
from memoryd.logs import get_logger
from memoryd.state.meta import clear_unusable_llm, note_unusable_llm, streak_checked_since

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.contract import RecordMemories
    from memoryd.heartbeat.engine import Heartbeat, _Progress


# What only a heartbeat with something to file needs is imported where it is used, as in
# `memoryd.heartbeat.engine`: an idle heartbeat must not pay for it (issue 15).

log = get_logger("memoryd.extractors.answers")  # the name its events always had

# Invalid answers in a row (from different chunks) that show the model cannot do the task. While
# a streak seen within STREAK_RECHECK_INTERVAL says so, one invalid answer confirms it (at most
# two requests a heartbeat); after that a whole streak is needed again, so that a working model
# stuck behind one bad chunk is noticed within the interval.
INVALID_ANSWER_STREAK = 3
STREAK_RECHECK_INTERVAL = timedelta(hours=1)


def answer(
    hb: Heartbeat, chunk: Chunk, session: StoreSession, progress: _Progress, upcoming: list[Chunk]
) -> RecordMemories | None:
    """The chunk's validated answer: from the journal if already paid for, else the model
    (asked ahead of time, or now; `memoryd.heartbeat.ahead`)."""
    handled, shared = sharing.take(hb, chunk, session, progress, upcoming)
    if handled:
        return shared  # answered by a call its group shared (or that call failed)
    stored = hb.state.journal.answered(chunk.key)
    if stored is not None and stored.answer_json is not None:
        hb.report.chunks_reused += 1
        from memoryd.extractors.contract import RecordMemories  # noqa: PLC0415 - see the imports

        return RecordMemories.model_validate_json(stored.answer_json)
    context = hb._context(chunk, session)
    flight = hb.ahead.take(chunk.key)
    if flight is not None and flight.context != context:
        # Sent ahead, but a chunk applied since changed what it would be shown: ask again.
        if not flight.future.cancel():
            hb._set_aside.append(flight)
        hb.report.chunks_reextracted += 1
        flight = None
    if flight is None:
        hb.ahead.settle()  # a stale call taken above is not this chunk's call any more
        if not sending.fits_budget(hb, chunk):
            # Only the per-heartbeat share is used up when the day's budget still allows
            # the call on its own: more is waiting for the next heartbeat.
            estimate = hb.budget.estimate(hb._estimate_input(chunk))
            hb.report.more_waiting = hb.budget.allows_cost(estimate, 0.0)
            hb._stop("budget")
            progress.held_files.update(chunk.files)
            return None
        flight = sending.send(hb, chunk, context)
        hb.ahead.take(chunk.key)  # this chunk's own turn: not in flight for later ones
    sending.send_ahead(hb, upcoming, session, progress)
    try:
        return _awaited(hb, chunk, flight, progress)
    finally:
        hb.ahead.settle()


def _awaited(
    hb: Heartbeat, chunk: Chunk, flight: Flight, progress: _Progress
) -> RecordMemories | None:
    """The answer of the chunk's call, journalled and charged; None when it failed."""
    try:
        extraction = flight.future.result()
    except RetryRefusedError as error:
        hb._charge(error.usage, None)
        hb._stop("budget")
        progress.held_files.update(chunk.files)
        return None
    except (InvalidAnswerError, TransientLLMError, PermanentLLMError) as error:
        # The failure record keeps the whole chunk (`memoryd retry` rebuilds it from there).
        extraction_failed(hb, chunk, sending.full_plan(chunk), error, progress)
        return None
    with hb.state.transaction():
        hb.state.journal.record_answer(
            chunk.key,
            answer_json=extraction.answer.model_dump_json(),
            usage=extraction.usage,
            model=extraction.model or hb.settings.model,
            at=hb.clock(),
        )
        hb._charge(extraction.usage, extraction.model)
    hb.report.chunks_extracted += 1
    if hb.report.chunks_extracted == 1:
        sending.note_proven(hb)
    settle_invalid_answers(hb, progress)  # the model works: they were the chunks' own
    answered(hb, valid=True)
    return extraction.answer


def extraction_failed(
    hb: Heartbeat,
    chunk: Chunk,
    plan: str,
    error: InvalidAnswerError | TransientLLMError | PermanentLLMError,
    progress: _Progress,
) -> None:
    """No answer for this chunk: it fails (or is held back), or the heartbeat stops."""
    if isinstance(error, InvalidAnswerError):
        hb._charge(error.usage, None)
        _invalid_answer(hb, chunk, plan, error, progress)
    elif isinstance(error, UnusableLLMError):
        _unusable(hb, error, chunk, progress)
    elif isinstance(error, TransientLLMError):
        hb._stop(f"llm: {error}")
        progress.held_files.update(chunk.files)
    else:
        hb._fail(chunk, plan, str(error), progress)  # about this request only


def _invalid_answer(
    hb: Heartbeat, chunk: Chunk, plan: str, error: InvalidAnswerError, progress: _Progress
) -> None:
    """The answer broke the tool contract. A refusal is about this content: the chunk fails
    now. Any other invalid answer is held back (with its chunk's files) until it is known
    whether the chunk or the model is at fault; a streak makes the model unusable."""
    reason = f"{error} | answer: {error.raw_answer}"
    answered(hb, valid=False)
    if error.about_content:
        hb._fail(chunk, plan, reason, progress)
        return
    progress.held_files.update(chunk.files)
    progress.held_back.append((chunk, plan, reason))
    threshold, whole_streak = _streak_threshold(hb, error.endpoint)
    if len(progress.held_back) >= threshold:
        unusable = UnusableLLMError.invalid_answers(
            model=hb.settings.model,
            endpoint=error.endpoint,
            count=len(progress.held_back),
            reason=error.reason,
        )
        _unusable(hb, unusable, chunk, progress, streak_checked=whole_streak)


def _streak_threshold(hb: Heartbeat, endpoint: str | None) -> tuple[int, bool]:
    """How many invalid answers in a row make the model unusable now, and whether that is a
    whole streak (see INVALID_ANSWER_STREAK)."""
    checked = streak_checked_since(hb.state.meta, model=hb.settings.model, endpoint=endpoint)
    if checked is not None and hb.clock() - checked < STREAK_RECHECK_INTERVAL:
        return 1, False
    return INVALID_ANSWER_STREAK, True


def settle_invalid_answers(hb: Heartbeat, progress: _Progress) -> None:
    """Record the held-back invalid answers as their chunks' failures: a valid answer
    proved the model works, or the heartbeat ended short of a streak."""
    held, progress.held_back = progress.held_back, []
    for chunk, plan, reason in held:
        hb._fail(chunk, plan, reason, progress)


def _unusable(
    hb: Heartbeat,
    error: UnusableLLMError,
    chunk: Chunk,
    progress: _Progress,
    *,
    streak_checked: bool = False,
) -> None:
    """A run-level problem: stop at once, this chunk's cursor held and the rest deferred,
    with no failure counted (the held-back ones are dropped); record it for `status` and
    tell the operator what to fix (when new or changed, and at most once an hour)."""
    progress.held_files.update(chunk.files)
    progress.held_back.clear()
    hb._stop(f"llm unusable ({error.kind}): {error.remedy}", outcome="unusable")
    hb.report.unusable = error
    problem = error.problem()
    if note_unusable_llm(hb.state.meta, problem, hb.clock(), streak_checked=streak_checked):
        log.error("llm.unusable", run_id=hb.run_id, **problem)


def answered(hb: Heartbeat, *, valid: bool) -> None:
    """The model answered: forget a recorded problem that the answer disproves."""
    cleared = clear_unusable_llm(hb.state.meta, model=hb.settings.model, valid_answer=valid)
    if cleared is not None:
        log.info(
            "llm.recovered",
            run_id=hb.run_id,
            kind=cleared.get("kind"),
            endpoint=cleared.get("endpoint"),
            model=cleared.get("model"),
            since=cleared.get("since"),
        )
