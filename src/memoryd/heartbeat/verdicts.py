"""What a chunk without an answer means: it fails, is held back, or the whole run stops.

A run-level failure (`UnusableLLMError`: the key refused, the model retired, no credit, the
endpoint's size limit, or `INVALID_ANSWER_STREAK` invalid answers in a row, which show that the
model itself cannot do the task) stops the heartbeat as a transient failure does (what was applied
is committed, the rest waits), but counts against no chunk: invalid answers are held back until a
valid one proves the model works (then they are the chunks' own failures, as they are when the
heartbeat ends short of a streak), and a streak drops them. The problem is recorded in the state
database for `status` until an answer disproves it, and logged as `llm.unusable` when it appears or
changes and at most once an hour while it lasts.

Both a chunk's own call (`memoryd.heartbeat.answers`) and a call its group shared
(`memoryd.heartbeat.sharing`) end here, so this module sits below both.
"""

from __future__ import annotations

from datetime import timedelta

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import InvalidAnswerError
from memoryd.heartbeat.run import RunBook
from memoryd.llm.base import PermanentLLMError, TransientLLMError, UnusableLLMError
from memoryd.logs import get_logger
from memoryd.state.meta import clear_unusable_llm, note_unusable_llm, streak_checked_since

log = get_logger("memoryd.extractors.answers")  # the name its events always had

# Invalid answers in a row (from different chunks) that show the model cannot do the task. While
# a streak seen within STREAK_RECHECK_INTERVAL says so, one invalid answer confirms it (at most
# two requests a heartbeat); after that a whole streak is needed again, so that a working model
# stuck behind one bad chunk is noticed within the interval.
INVALID_ANSWER_STREAK = 3
STREAK_RECHECK_INTERVAL = timedelta(hours=1)


def extraction_failed(
    run: RunBook,
    chunk: Chunk,
    plan: str,
    error: InvalidAnswerError | TransientLLMError | PermanentLLMError,
) -> None:
    """No answer for this chunk: it fails (or is held back), or the heartbeat stops."""
    if isinstance(error, InvalidAnswerError):
        run.charge(error.usage, None)
        _invalid_answer(run, chunk, plan, error)
    elif isinstance(error, UnusableLLMError):
        _unusable(run, error, chunk)
    elif isinstance(error, TransientLLMError):
        run.stop(f"llm: {error}")
        run.hold(chunk)
    else:
        run.fail(chunk, plan, str(error))  # about this request only


def _invalid_answer(run: RunBook, chunk: Chunk, plan: str, error: InvalidAnswerError) -> None:
    """The answer broke the tool contract. A refusal is about this content: the chunk fails
    now. Any other invalid answer is held back (with its chunk's files) until it is known
    whether the chunk or the model is at fault; a streak makes the model unusable."""
    reason = f"{error} | answer: {error.raw_answer}"
    answered(run, valid=False)
    if error.about_content:
        run.fail(chunk, plan, reason)
        return
    run.hold(chunk)
    run.held_back.append((chunk, plan, reason))
    threshold, whole_streak = _streak_threshold(run, error.endpoint)
    if len(run.held_back) >= threshold:
        unusable = UnusableLLMError.invalid_answers(
            model=run.settings.model,
            endpoint=error.endpoint,
            count=len(run.held_back),
            reason=error.reason,
        )
        _unusable(run, unusable, chunk, streak_checked=whole_streak)


def _streak_threshold(run: RunBook, endpoint: str | None) -> tuple[int, bool]:
    """How many invalid answers in a row make the model unusable now, and whether that is a
    whole streak (see INVALID_ANSWER_STREAK)."""
    checked = streak_checked_since(run.state.meta, model=run.settings.model, endpoint=endpoint)
    if checked is not None and run.clock() - checked < STREAK_RECHECK_INTERVAL:
        return 1, False
    return INVALID_ANSWER_STREAK, True


def settle_invalid_answers(run: RunBook) -> None:
    """Record the held-back invalid answers as their chunks' failures: a valid answer
    proved the model works, or the heartbeat ended short of a streak."""
    held, run.held_back = run.held_back, []
    for chunk, plan, reason in held:
        run.fail(chunk, plan, reason)


def _unusable(
    run: RunBook,
    error: UnusableLLMError,
    chunk: Chunk,
    *,
    streak_checked: bool = False,
) -> None:
    """A run-level problem: stop at once, this chunk's cursor held and the rest deferred,
    with no failure counted (the held-back ones are dropped); record it for `status` and
    tell the operator what to fix (when new or changed, and at most once an hour)."""
    run.hold(chunk)
    run.held_back.clear()
    run.stop(f"llm unusable ({error.kind}): {error.remedy}", outcome="unusable")
    run.report.unusable = error
    problem = error.problem()
    if note_unusable_llm(run.state.meta, problem, run.clock(), streak_checked=streak_checked):
        log.error("llm.unusable", run_id=run.run_id, **problem)


def answered(run: RunBook, *, valid: bool) -> None:
    """The model answered: forget a recorded problem that the answer disproves."""
    cleared = clear_unusable_llm(run.state.meta, model=run.settings.model, valid_answer=valid)
    if cleared is not None:
        log.info(
            "llm.recovered",
            run_id=run.run_id,
            kind=cleared.get("kind"),
            endpoint=cleared.get("endpoint"),
            model=cleared.get("model"),
            since=cleared.get("since"),
        )
