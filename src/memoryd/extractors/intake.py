"""Intake: what a heartbeat reads, turned into chunks (docs/heartbeat.md, step 2 and 3).

Every source is read from its committed cursors; each new conversation is cleaned, its user and
assistant text goes into the full-text index of conversation-days (mention counting needs it
before anything is filed), and it is cut into chunks. Quarantined chunks that `memoryd retry`
put back in the queue join them. Nothing here advances a cursor: the new cursors travel with the
result and are committed after the git commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from memoryd.extractors.chunking import Chunk, TokenEstimator, chunk_from_json, cut_chunks
from memoryd.llm.base import estimate_tokens
from memoryd.logs import get_logger
from memoryd.sources.cursor import CursorError, StoredCursors
from memoryd.sources.model import Conversation
from memoryd.sources.reader import DEFAULT_MAX_BYTES, SourceReader
from memoryd.state.facade import State
from memoryd.store.hosts import LineRange, covered, merge_ranges

log = get_logger(__name__)

Cleaner = Callable[[Conversation], Conversation | None]


@dataclass(frozen=True)
class Source:
    """One configured source of one agent; `key` identifies it in the state database."""

    agent: str
    key: str
    reader: SourceReader


# The line ranges already filed beyond a held-back cursor, per file (`memoryd.store.hosts`).
AHEAD_KEY = "source.ahead"


@dataclass
class Intake:
    """What reading all sources gave: chunks, and the cursors to commit per source."""

    chunks: list[Chunk]
    old: dict[str, dict[str, str]]  # source key -> path -> cursor JSON, as committed
    new: dict[str, dict[str, str]]  # source key -> path -> cursor JSON, after this read
    sources_by_file: dict[str, str]  # file path -> source key
    # path -> line ranges filed beyond its held-back cursor by earlier heartbeats (skipped here)
    ahead: dict[str, tuple[LineRange, ...]] = field(default_factory=dict)
    # source key -> why the source path itself could not be read (its cursors are kept)
    unreadable: dict[str, str] = field(default_factory=dict)
    # A source stopped at its per-run read share: more is waiting to be read.
    more: bool = False
    # (agent, source key, path, over-long lines dropped unread), for `memoryd status`
    dropped: list[tuple[str, str, str, int]] = field(default_factory=list)


def stored_ahead(state: State) -> dict[str, tuple[LineRange, ...]]:
    """The line ranges already filed beyond held-back cursors, as the state database has them."""
    raw = state.meta.get_json(AHEAD_KEY) or {}
    return {path: merge_ranges([(a, b) for a, b in ranges]) for path, ranges in raw.items()}


def read_sources(
    sources: Sequence[Source],
    state: State,
    *,
    clean: Cleaner,
    zone: ZoneInfo,
    chunk_tokens: int,
    backfill: timedelta | None,
    now: datetime,
    index_mentions: bool,
    estimate: TokenEstimator = estimate_tokens,
    read_share: int = DEFAULT_MAX_BYTES,
    positions: Mapping[str, dict[str, str]] | None = None,
) -> Intake:
    """Read every source from its committed cursors, at most about `read_share` bytes of each
    (what one heartbeat reads). `positions` (source key -> cursors, as `Intake.new` gives them)
    stand in for the committed cursors of the sources they name, as if a heartbeat had
    committed them: a dry run follows the heartbeats it predicts with them, moving nothing."""
    intake = Intake([], {}, {}, {}, stored_ahead(state))
    since = now - backfill if backfill else None
    for source in sources:
        followed = None if positions is None else positions.get(source.key)
        stored = (
            state.cursors.for_source(source.agent, source.key) if followed is None else followed
        )
        cursors = _stored_cursors(source, stored)
        first_sight = followed is None and state.meta.get(f"source.seen:{source.key}") is None
        result = source.reader.read(
            cursors, since=since, first_sight=first_sight, max_bytes=read_share
        )
        intake.old[source.key] = dict(stored)
        # A cursor that did not move keeps its stored text (no decoding, nor encoding, of every
        # file's cursor on a heartbeat where nothing is new).
        new = {path: stored[path] for path in result.kept}
        new.update(
            (path, stored[path] if cursors.get(path) == cursor else cursor.to_json())
            for path, cursor in result.cursors.items()
        )
        intake.new[source.key] = new
        for conversation in result.conversations:
            cleaned = clean(_not_yet_filed(conversation, intake.ahead))
            if cleaned is None:
                continue
            for turn in cleaned.turns:
                intake.sources_by_file[turn.provenance.file] = source.key
            if index_mentions:
                index_conversation(state, cleaned, zone)
            intake.chunks.extend(cut_chunks(cleaned, zone, chunk_tokens, estimate))
        intake.dropped.extend(
            (source.agent, source.key, path, lines)
            for path, lines in sorted(result.dropped.items())
        )
        if result.more:
            intake.more = True
            log.info("source.more_to_read", source=source.key, agent=source.agent)
        if result.unreadable is not None:
            intake.unreadable[source.key] = result.unreadable
            log.error(
                "source.unreadable", source=source.key, agent=source.agent, reason=result.unreadable
            )
    return intake


def _not_yet_filed(
    conversation: Conversation, ahead: dict[str, tuple[LineRange, ...]]
) -> Conversation:
    """The conversation without the turns an earlier heartbeat already filed beyond its file's
    held-back cursor (read again because an earlier part of the file was held)."""
    if not ahead:
        return conversation
    turns = tuple(
        turn
        for turn in conversation.turns
        if not covered(ahead.get(turn.provenance.file, ()), turn.provenance.lines)
    )
    return (
        conversation
        if len(turns) == len(conversation.turns)
        else replace(conversation, turns=turns)
    )


def _stored_cursors(source: Source, stored: dict[str, str]) -> StoredCursors:
    """The stored cursors of a source, decoded when the reader needs them (`StoredCursors`);
    one that cannot be decoded (written by a newer memoryd, or damaged) is logged and dropped,
    so that its file is read as new (`CursorError`)."""

    def unreadable(path: str, error: CursorError) -> None:
        log.warning("source.cursor_unreadable", source=source.key, path=path, error=str(error))

    return StoredCursors(stored, unreadable)


def index_conversation(state: State, conversation: Conversation, zone: ZoneInfo) -> None:
    """Add the conversation's user and assistant text to the index, one row per local day."""
    by_day: dict[str, list[str]] = {}
    for turn in conversation.turns:
        if turn.role in ("user", "assistant"):
            day = turn.timestamp.astimezone(zone).date().isoformat()
            by_day.setdefault(day, []).append(turn.text)
    for day, texts in sorted(by_day.items()):
        state.mentions.append(
            conversation.agent,
            conversation.session_id,
            datetime.fromisoformat(day).date(),
            "\n".join(texts),
        )


def requeued_chunks(state: State) -> list[Chunk]:
    """The quarantined chunks `memoryd retry` put back, rebuilt from their journalled plans."""
    chunks = []
    for record in state.failures.requeued():
        try:
            chunks.append(chunk_from_json(json.loads(record.plan_json)))
        except (KeyError, ValueError, TypeError) as error:
            log.error("chunk.unreadable_plan", chunk_key=record.chunk_key, error=str(error))
    return chunks


def chronological(chunks: list[Chunk]) -> list[Chunk]:
    """Chunks in the order their conversations happened, each once."""
    unique = {chunk.key: chunk for chunk in chunks}
    return sorted(
        unique.values(),
        key=lambda c: (c.turns[0].timestamp, c.agent, c.session_id, c.day, c.part),
    )
