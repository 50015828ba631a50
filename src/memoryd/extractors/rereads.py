"""Rereads: the history a reprocess request reads again, as chunks (`memoryd reprocess`).

A request (`memoryd.store.reprocess`) names an agent, a source, and days; a heartbeat reads the
sources it covers again from their beginning, independently of their cursors (which it never
moves), keeps the turns the request selects — of the days asked, written before the request was
made, and not filed yet by an earlier heartbeat of the same request — cleans them as any turn is
cleaned, and cuts them into chunks marked with the request's id. The mark is part of each
chunk's key, so the journal tells a re-read chunk from the chunk the first reading filed: its
answer is asked again (with the current provider, model and prompts) and, once received, never
paid for twice. The chunks then go through the normal pipeline with the heartbeat's own.

Nothing here is counted as a mention again: the conversation-days were indexed the first time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from zoneinfo import ZoneInfo

from memoryd.errors import CorruptFileError
from memoryd.extractors.chunking import REMEMBERED_FORMAT, Chunk, TokenEstimator, cut_chunks
from memoryd.extractors.intake import Cleaner, Source
from memoryd.logs import get_logger
from memoryd.sources.cursor import FileCursor
from memoryd.sources.model import Conversation
from memoryd.store.reprocess import ReprocessRequest, active_requests, progressed
from memoryd.worktree import FileTransaction

log = get_logger(__name__)

# Reads of one source in one rereading, at the reader's byte share each: a bound against a
# reader that would say "more" for ever.
MAX_READS_PER_SOURCE = 10_000


@dataclass
class Rereading:
    """The requests a heartbeat works on, and the chunks each reads again (chronological)."""

    requests: list[ReprocessRequest]
    chunks: dict[str, list[Chunk]] = field(default_factory=dict)  # request id -> chunks

    @property
    def all_chunks(self) -> list[Chunk]:
        return [chunk for request in self.requests for chunk in self.chunks.get(request.id, [])]

    def progressed(self, settled: Callable[[Chunk], bool], run_id: str) -> list[ReprocessRequest]:
        """The requests after this heartbeat: each done when all its chunks are `settled`,
        else reading again from its first chunk that is not."""
        after = []
        for request in self.requests:
            left = [chunk for chunk in self.chunks.get(request.id, []) if not settled(chunk)]
            resume_from = min((c.turns[0].timestamp for c in left), default=None)
            after.append(progressed(request, resume_from=resume_from, run_id=run_id))
        return after


def covered_sources(request: ReprocessRequest, sources: Sequence[Source]) -> list[Source]:
    """The configured sources the request reads again (an agent's remembered queue is not:
    what it held was filed and removed)."""
    return [
        source
        for source in sources
        if source.key.split(":", 1)[0] != REMEMBERED_FORMAT
        and request.covers(source.agent, source.reader.source.path)
    ]


def read_again(
    requests: Sequence[ReprocessRequest],
    sources: Sequence[Source],
    *,
    clean: Cleaner,
    zone: ZoneInfo,
    chunk_tokens: int,
    estimate: TokenEstimator,
) -> Rereading:
    """The chunks each request reads again, in chronological order."""
    rereading = Rereading(list(requests))
    for request in requests:
        chunks: list[Chunk] = []
        for source in covered_sources(request, sources):
            for conversation in _conversations(source):
                selected = _selected(conversation, request, zone)
                cleaned = clean(selected) if selected is not None else None
                if cleaned is None:
                    continue
                chunks.extend(
                    replace(chunk, reread=request.id)
                    for chunk in cut_chunks(cleaned, zone, chunk_tokens, estimate)
                )
        chunks.sort(key=lambda c: (c.turns[0].timestamp, c.agent, c.session_id, c.day, c.part))
        rereading.chunks[request.id] = chunks
        log.info(
            "reprocess.reading",
            request=request.id,
            state=request.state,
            chunks=len(chunks),
            days=len({(c.agent, c.day) for c in chunks}),
        )
    return rereading


def _conversations(source: Source) -> list[Conversation]:
    """Everything the source holds now, read from its beginning (its cursors untouched)."""
    conversations: list[Conversation] = []
    cursors: Mapping[str, FileCursor] = {}
    for _ in range(MAX_READS_PER_SOURCE):
        result = source.reader.read(cursors, since=None, first_sight=False)
        conversations.extend(result.conversations)
        if result.unreadable is not None:
            log.warning("reprocess.source_unreadable", source=source.key, reason=result.unreadable)
        if not result.more or dict(result.cursors) == dict(cursors):
            break
        cursors = dict(result.cursors)
    return conversations


def _selected(
    conversation: Conversation, request: ReprocessRequest, zone: ZoneInfo
) -> Conversation | None:
    """The conversation's turns the request reads again, or None when there are none."""
    turns = tuple(
        turn
        for turn in conversation.turns
        if request.selects(turn.timestamp.astimezone(zone).date(), turn.timestamp)
    )
    if not turns:
        return None
    return (
        conversation
        if len(turns) == len(conversation.turns)
        else replace(conversation, turns=turns)
    )


def rereading_for(
    tx: FileTransaction,
    host: str,
    sources: Sequence[Source],
    *,
    clean: Cleaner,
    zone: ZoneInfo,
    chunk_tokens: int,
    estimate: TokenEstimator,
) -> Rereading:
    """What the active requests of `host` in the store read again now. A request file that
    does not parse is reported (`reprocess.unreadable`) and left as it is: nothing is read
    again until it is mended or removed."""
    try:
        requests = active_requests(tx, host)
    except CorruptFileError as error:
        log.error("reprocess.unreadable", path=str(error.path), error=str(error))
        return Rereading([])
    if not requests:
        return Rereading([])
    return read_again(
        requests, sources, clean=clean, zone=zone, chunk_tokens=chunk_tokens, estimate=estimate
    )
