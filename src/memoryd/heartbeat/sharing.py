"""Short conversations of one agent sharing one model call, whatever their days.

Before a heartbeat applies its chunks, `plan_groups` (`memoryd.heartbeat.grouping`) finds groups
of short chunks of the same agent and routine, in chronological order, together within one
chunk's token budget, at most `sections_per_call` of them, whatever chunks of other agents come
between them. They may be of different days: each section carries its own date, and each chunk
is filed on its own day (its answer is its own). When the first chunk of such a group has its
turn, `take` asks the model once for the whole group (`memoryd.extractors.sections`), each
member with the context the store offers at that moment, and splits the answer per chunk.
Every chunk keeps its own journal record: each plan is journalled before the call, and every
chunk's answer (the call's usage on the first), with the stamp of the context it was asked with
(`memoryd.heartbeat.reconcile.stamp`, naming the members before it in the request), in one
transaction before anything is applied; the others are then applied at their own turns, in
order. A killed heartbeat finds the answers in the journal and pays nothing twice; a chunk is
filed once, since it is marked committed by its own key.

A member whose turn comes after only its group's earlier members were applied takes its answer
as given: the model saw them in the same request. When chunks of other agents were applied
since the call, its answer is checked as one sent ahead is (`memoryd.heartbeat.answers`): as
given when its context did not change, reconciled by code when it can be, else the chunk is
asked again alone. A journalled member's answer reused by a later heartbeat goes through the
same check, the facts of the members before it counting as seen.

Members are never sent ahead on their own. When the call does not give a usable answer (an
invalid answer twice, a refusal, an error about this request), its cost is charged and the chunks
are asked one by one as usual, in this heartbeat and the later ones (the state database keeps
their keys, so a heartbeat stopped by its budget share does not pay for the same call again);
an error about the whole run stops the heartbeat as for one chunk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import (
    ChunkContext,
    Extraction,
    InvalidAnswerError,
    RetryRefusedError,
    WatchedExtractor,
    shares_calls,
)
from memoryd.extractors.llm_extractor import LLMExtractor
from memoryd.heartbeat import sending, verdicts
from memoryd.heartbeat.ahead import full_plan, lean_plan
from memoryd.heartbeat.grouping import SharedAnswer, plan_groups
from memoryd.heartbeat.reconcile import stamp
from memoryd.heartbeat.run import RunBook
from memoryd.llm.base import PermanentLLMError, TransientLLMError, UnusableLLMError
from memoryd.llm.prices import Usage
from memoryd.logs import get_logger

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.contract import RecordMemories

log = get_logger("memoryd.extractors.sharing")  # the name its events always had

# State-database key: the chunks whose shared call gave no usable answer (asked alone since).
ALONE_KEY = "sharing.ask_alone"


def plan(run: RunBook, chunks: list[Chunk]) -> None:
    """Find the heartbeat's groups; their chunks are not sent ahead one by one."""
    limit = run.settings.sections_per_call
    if limit < 2 or not shares_calls(run.extractor):
        return
    alone = _asked_alone(run, chunks)
    run.groups = plan_groups(
        [chunk for chunk in chunks if chunk.key not in alone],
        run.settings.chunk_tokens,
        limit,
        run.settings.estimate_tokens,
    )
    for members in run.groups.values():
        run.not_ahead.update(member.key for member in members)


def take(
    run: RunBook,
    chunk: Chunk,
    session: StoreSession,
    upcoming: list[Chunk],
) -> tuple[bool, RecordMemories | None, str | None]:
    """(handled, answer, stale) for a chunk whose turn has come: the answer a shared call gave
    it; or, for the first chunk of a group not answered yet, one call for the group (the other
    members' answers journalled and kept for their turns), with (True, None, None) when the
    heartbeat stopped or the chunk failed. `stale`: the stamp the answer was asked with, when
    chunks other than its group's were applied since (the caller checks it against the store
    now); None when it holds as given. (False, None, None): not shared, ask the chunk as
    usual."""
    shared = run.group_answers.pop(chunk.key, None)
    if shared is not None:
        since = run.done[shared.applied :]
        if all(key in shared.members for key in since):
            return True, shared.answer, None  # the model saw what was applied since
        return True, shared.answer, shared.asked_with
    handled, answer = _ask_group(run, chunk, session, upcoming)
    return handled, answer, None


def _ask_group(
    run: RunBook,
    chunk: Chunk,
    session: StoreSession,
    upcoming: list[Chunk],
) -> tuple[bool, RecordMemories | None]:
    """For the first chunk of a group not answered yet: (True, its answer) from one call for
    the group, (True, None) when the heartbeat stopped or the chunk failed, (False, None) when
    the chunk is asked as usual."""
    if chunk.key not in run.groups or run.state.journal.answered(chunk.key) is not None:
        run.groups.pop(chunk.key, None)
        return False, None
    members = [
        member
        for member in run.groups.pop(chunk.key)
        if member.key == chunk.key or _still_open(run, member)
    ]
    if len(members) < 2:
        return False, None
    estimate = run.budget.estimate(
        sum(run.settings.estimate_tokens(member.render()) for member in members)
        + PROMPT_TOKENS_ALLOWANCE
    )
    if estimate is not None and not run.budget.allows_cost(
        estimate + run.ahead.reserved(), run.report.cost_usd
    ):
        return False, None  # asked alone, the chunk's own turn decides about the budget
    for member in members:
        run.state.journal.plan(
            member.key, run_id=run.run_id, plan_json=lean_plan(member), at=run.clock()
        )
    contexts = [run.context(member, session) for member in members]
    # Each member's stamp names the members before it: the model saw them in the request.
    stamps = [
        stamp(context).with_after(members[:number]).to_text()
        for number, context in enumerate(contexts)
    ]
    cache_prefix = _reused(run, members, upcoming)
    handled, result = _call(run, members, contexts, estimate, cache_prefix)
    if result is None:
        return handled, None
    extraction, given = result
    model = extraction.model or run.settings.model
    with run.state.transaction():
        for number, (member, answer) in enumerate(zip(members, given, strict=True)):
            run.state.journal.record_answer(
                member.key,
                answer_json=answer.model_dump_json(),
                usage=extraction.usage if number == 0 else Usage(),
                model=model,
                at=run.clock(),
                asked_with=stamps[number],
            )
        run.charge(extraction.usage, extraction.model)
    run.note_extracted(len(members))
    verdicts.settle_invalid_answers(run)
    verdicts.answered(run, valid=True)
    keys = frozenset(member.key for member in members)
    for member, answer, asked_with in zip(members[1:], given[1:], stamps[1:], strict=True):
        run.group_answers[member.key] = SharedAnswer(answer, asked_with, len(run.done), keys)
    sending.send_ahead(run, upcoming, session)
    return True, given[0]


def _call(
    run: RunBook,
    members: list[Chunk],
    contexts: list[ChunkContext],
    estimate: float | None,
    cache_prefix: bool,
) -> tuple[bool, tuple[Extraction, list[RecordMemories]] | None]:
    """The shared call: (True, result), or (handled, None) when it gave no usable answer."""
    chunk = members[0]
    extractor = run.extractor
    if not isinstance(extractor, LLMExtractor | WatchedExtractor):
        return False, None  # `plan` made no group for it
    try:
        return True, extractor.extract_sections(
            members, contexts, sending.retry_check(run, estimate), cache_prefix=cache_prefix
        )
    except RetryRefusedError as error:
        # The shared answer was invalid and its corrective retry would pass the budget.
        run.charge(error.usage, None)
        _ask_alone_from_now_on(run, members)
        run.stop("budget")
        run.hold(chunk)
        return True, None
    except InvalidAnswerError as error:
        run.charge(error.usage, None)
        _ask_alone_from_now_on(run, members)
        log.warning("sections.fell_back", chunks=len(members), reason=error.reason[:300])
        return False, None
    except (UnusableLLMError, TransientLLMError) as error:
        verdicts.extraction_failed(run, chunk, full_plan(chunk), error)
        return True, None
    except PermanentLLMError as error:
        log.warning("sections.fell_back", chunks=len(members), reason=str(error)[:300])
        return False, None


def _reused(run: RunBook, members: list[Chunk], upcoming: list[Chunk]) -> bool:
    """Whether another call of this heartbeat sends the same prefix, so that marking it for
    the cache pays: a call was made before (its cache write is read now) or a chunk after the
    group still needs the model. A heartbeat's only call is sent unmarked: a cache write costs
    1.25 times plain input, and the next heartbeat comes after the cache has expired."""
    usage = run.report.usage
    if usage.input_tokens or usage.cache_creation_input_tokens or usage.cache_read_input_tokens:
        return True
    grouped = {member.key for member in members}
    return any(chunk.key not in grouped and _still_open(run, chunk) for chunk in upcoming)


def _ask_alone_from_now_on(run: RunBook, members: list[Chunk]) -> None:
    """Remember that these chunks' shared call gave no usable answer: a later heartbeat (this
    one stopped by its budget share, say) asks them one by one, instead of paying for the same
    unusable shared call again each time."""
    alone = set(run.state.meta.get_json(ALONE_KEY) or [])
    run.state.meta.set_json(ALONE_KEY, sorted(alone | {member.key for member in members}))


def _asked_alone(run: RunBook, chunks: list[Chunk]) -> set[str]:
    """The chunks a shared call failed for before; the list forgets those answered since."""
    stored = run.state.meta.get_json(ALONE_KEY) or []
    alone = {key for key in stored if run.state.journal.answered(key) is None}
    if len(alone) != len(stored):
        run.state.meta.set_json(ALONE_KEY, sorted(alone))
    return alone & {chunk.key for chunk in chunks}


def _still_open(run: RunBook, chunk: Chunk) -> bool:
    """Whether the member still needs the model (not answered, failed for good or held)."""
    return (
        chunk.has_dialogue
        and run.state.journal.answered(chunk.key) is None
        and not run.state.failures.is_quarantined(chunk.key)
        and not any(path in run.held_files for path in chunk.files)
    )
