"""Read one transcript file from its cursor: identity checks, tailing, de-duplication, backfill.

The caller has already stat'ed the file. Steps for a line format:
1. Unchanged since the last scan (same inode, size and mtime, last scan reached the end): nothing
   to do, and the file is not even opened. This keeps a heartbeat over a large history cheap.
2. Otherwise check the identity: a different inode (replaced), a smaller size (truncated) or a
   different head (rewritten) restarts the file from byte 0 with de-duplication against the
   remembered keys, so nothing already yielded comes out again.
3. A file first seen together with its source and untouched since before the backfill cutoff is
   skipped to its last complete line without being parsed.
4. Complete lines are decoded up to the byte budget; bad lines are counted and skipped.
5. Records are de-duplicated, pruned of abandoned branches, merged, filtered by the backfill
   cutoff and grouped into conversations; the new cursor is returned, never stored.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from memoryd.sources._lines import LineScan, last_line_end
from memoryd.sources._open import open_content, open_regular
from memoryd.sources._tree import prune_abandoned
from memoryd.sources.cursor import HEAD_BYTES, FileCursor, FileIdentity, key_digest
from memoryd.sources.formats import Decoder, DocumentFormat, LineFormat
from memoryd.sources.model import Conversation
from memoryd.sources.records import (
    FileContext,
    MalformedLineError,
    Record,
    assemble,
    split_concatenated,
)

# A re-read of a gzipped file de-duplicates all of it: its decompressed size is not known ahead.
_WHOLE_FILE = 1 << 62


@dataclass(frozen=True)
class ReadOptions:
    """What stays the same for every file of one read of one source."""

    agent: str
    routine: str | None
    max_line_bytes: int
    block_bytes: int


@dataclass(frozen=True)
class ReadArguments:
    """One file to read: its path and status, its cursor (None when new), and the limits."""

    path: Path
    status: os.stat_result
    cursor: FileCursor | None
    not_before: datetime | None  # backfill cutoff for a file without a cursor
    options: ReadOptions
    budget: int


@dataclass
class FileOutcome:
    """What reading one file produced."""

    cursor: FileCursor
    conversations: list[Conversation] = field(default_factory=list)
    consumed: int = 0
    lines: int = 0
    malformed: int = 0
    long_lines: int = 0
    duplicates: int = 0
    before_since: int = 0
    restarted: str | None = None  # "replaced", "truncated" or "rewritten"
    at_eof: bool = True
    skipped: dict[str, int] = field(default_factory=dict)  # records not read, by reason


SKIPPED_STATE = "skipped"  # the cursor state key holding a file's running counts of skips
MAX_SKIP_REASONS = 20
OTHER_REASONS = "other reasons"


def with_skips(state: dict[str, Any], before: Mapping[str, Any], new: Mapping[str, int]) -> None:
    """Carry a file's running counts of skipped records into its next cursor state."""
    stored = before.get(SKIPPED_STATE)
    totals = (
        {k: v for k, v in stored.items() if isinstance(v, int)} if isinstance(stored, dict) else {}
    )
    for reason, count in new.items():
        totals[reason] = totals.get(reason, 0) + count
    if len(totals) > MAX_SKIP_REASONS:  # reasons name event types: a log could invent many
        ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
        kept = dict(ranked[: MAX_SKIP_REASONS - 1])
        kept[OTHER_REASONS] = sum(count for _, count in ranked[MAX_SKIP_REASONS - 1 :])
        totals = kept
    if totals:
        state[SKIPPED_STATE] = dict(sorted(totals.items()))


def unchanged(cursor: FileCursor | None, status: os.stat_result) -> bool:
    """Whether the file is exactly as the cursor's last complete scan left it."""
    return (
        cursor is not None
        and cursor.at_eof
        and cursor.identity.device == status.st_dev
        and cursor.identity.inode == status.st_ino
        and cursor.size == status.st_size
        and cursor.mtime_ns == status.st_mtime_ns
    )


def identity_of(raw: BinaryIO, status: os.stat_result) -> tuple[FileIdentity, bytes]:
    """Return the identity of an open file and the head bytes it hashed."""
    # Leave the position as found: a gzip reader may already wrap this file object.
    here = raw.tell()
    raw.seek(0)
    head = raw.read(HEAD_BYTES)
    raw.seek(here)
    digest = hashlib.sha256(head).hexdigest()
    return FileIdentity(status.st_dev, status.st_ino, digest, len(head)), head


def placeholder_cursor(
    path: Path, status: os.stat_result, not_before: datetime | None
) -> FileCursor:
    """A cursor at byte 0 for a file first seen with its source but not read yet (budget spent).

    It carries the backfill cutoff, so the later read that reaches the file still applies it.
    """
    with open_regular(path) as raw:
        identity, _ = identity_of(raw, status)
    return FileCursor(path=str(path), identity=identity, not_before=not_before, size=-1)


def _restart_reason(
    cursor: FileCursor, status: os.stat_result, head: bytes, compressed: bool
) -> str | None:
    if (cursor.identity.device, cursor.identity.inode) != (status.st_dev, status.st_ino):
        return "replaced"
    if status.st_size < cursor.size or (not compressed and status.st_size < cursor.position):
        return "truncated"
    old_head = hashlib.sha256(head[: cursor.identity.head_length]).hexdigest()
    if len(head) < cursor.identity.head_length or old_head != cursor.identity.head_sha256:
        return "rewritten"
    if compressed and cursor.size >= 0 and status.st_size != cursor.size:
        return "rewritten"  # a finished gzip log does not grow; a new one replaced it
    return None


def _restarted(
    cursor: FileCursor, identity: FileIdentity, compressed: bool, size: int
) -> FileCursor:
    """A cursor at byte 0 that still remembers what was yielded, to drop it when seen again."""
    return FileCursor(
        path=cursor.path,
        identity=identity,
        not_before=cursor.not_before,
        reread_until=_WHOLE_FILE if compressed else size,
        seen=cursor.seen,
        horizon=cursor.horizon,
        last_timestamp=cursor.last_timestamp,
        size=-1,
    )


def read_line_file(fmt: LineFormat, arguments: ReadArguments) -> FileOutcome:
    """Read what is new in one line-format file. Raise OSError, EOFError or gzip errors as met."""
    path, status, cursor = arguments.path, arguments.status, arguments.cursor
    compressed = fmt.compressed(path)
    with open_content(path, compressed) as (raw, content):
        refusal = fmt.refusal(path, os.fstat(raw.fileno()))
        if refusal is not None:
            raise OSError(errno.EPERM, refusal, str(path))
        identity, head = identity_of(raw, status)
        restarted = None
        if cursor is None:
            cursor = FileCursor(
                path=str(path), identity=identity, not_before=arguments.not_before, size=-1
            )
        else:
            restarted = _restart_reason(cursor, status, head, compressed)
            if restarted is not None:
                cursor = _restarted(cursor, identity, compressed, status.st_size)
        if (
            not compressed
            and cursor.position == 0
            and cursor.not_before is not None
            and status.st_mtime_ns < cursor.not_before.timestamp() * 1e9
        ):
            end, lines = last_line_end(raw, status.st_size)
            skipped = replace(cursor, position=end, line=lines)
            return FileOutcome(
                cursor=_finished(skipped, identity, status, end >= status.st_size),
                consumed=0,
            )
        return _scan(fmt, arguments, content, replace(cursor, identity=identity), restarted)


def _scan(
    fmt: LineFormat,
    arguments: ReadArguments,
    content: BinaryIO,
    cursor: FileCursor,
    restarted: str | None,
) -> FileOutcome:
    path, status, options = arguments.path, arguments.status, arguments.options
    decoder = fmt.decoder(path, cursor.state)
    scan = LineScan(
        content,
        cursor.position,
        cursor.line,
        budget=arguments.budget,
        max_line=options.max_line_bytes,
        block=options.block_bytes,
        in_long_line=cursor.in_long_line,
    )
    outcome = FileOutcome(cursor=cursor, restarted=restarted)
    records: list[Record] = []
    offsets: dict[int, int] = {}
    for number, offset, raw_line in scan:
        try:
            pieces = [(raw_line, decoder.decode(raw_line, number))]
        except MalformedLineError:
            pieces = _split_line(decoder, raw_line, number)
            if not pieces:
                outcome.malformed += 1
                continue
        for piece, decoded in pieces:
            line_key = None
            for index, record in enumerate(decoded):
                if record.key is None:
                    line_key = line_key or hashlib.sha256(piece).hexdigest()[:16]
                    record.key = f"{line_key}:{index}"
                offsets[id(record)] = offset
                records.append(record)
    records.extend(decoder.flush())
    outcome.skipped = decoder.skipped()
    outcome.lines = scan.line - cursor.line
    outcome.long_lines = scan.long_lines
    outcome.consumed = scan.position - cursor.position
    outcome.at_eof = scan.reached_eof

    records, keys, outcome.duplicates = _deduplicate(fmt, records, cursor, offsets)
    if fmt.tree:
        before = frozenset(cursor.seen)
        records = prune_abandoned(records, lambda uid: key_digest(uid) in before)
    records = decoder.finish(records)
    fallback = cursor.last_timestamp or datetime.fromtimestamp(status.st_mtime, UTC)
    records, outcome.before_since, last_time = _date_and_filter(
        records, fallback, cursor.not_before
    )

    context = FileContext(options.agent, options.routine, fmt.name, str(path), fallback)
    outcome.conversations = assemble(records, context)
    state = decoder.state()
    with_skips(state, cursor.state, outcome.skipped)
    reread_until = cursor.reread_until
    if reread_until is not None and (scan.reached_eof or scan.position >= reread_until):
        reread_until = None
    advanced = replace(
        cursor.remember(keys),
        position=scan.position,
        line=scan.line,
        in_long_line=scan.in_long_line,
        reread_until=reread_until,
        last_timestamp=last_time or cursor.last_timestamp,
        state=state,
    )
    outcome.cursor = _finished(advanced, cursor.identity, status, scan.reached_eof)
    return outcome


def _split_line(decoder: Decoder, raw: bytes, number: int) -> list[tuple[bytes, list[Record]]]:
    """Decode each object of a line that holds several (`{...}{...}`); [] if it does not."""
    pieces = split_concatenated(raw)
    decoded: list[tuple[bytes, list[Record]]] = []
    for piece in pieces or ():
        try:
            decoded.append((piece, decoder.decode(piece, number)))
        except MalformedLineError:
            continue
    return decoded


def _finished(
    cursor: FileCursor, identity: FileIdentity, status: os.stat_result, at_eof: bool
) -> FileCursor:
    return replace(
        cursor,
        identity=identity,
        size=status.st_size,
        mtime_ns=status.st_mtime_ns,
        at_eof=at_eof,
        # The backfill cutoff only concerns what was in the file when it was first seen.
        not_before=None if at_eof else cursor.not_before,
    )


def _deduplicate(
    fmt: LineFormat, records: list[Record], cursor: FileCursor, offsets: dict[int, int]
) -> tuple[list[Record], list[tuple[str, datetime | None]], int]:
    seen = set(cursor.seen)
    window: set[str] = set()
    keys: list[tuple[str, datetime | None]] = []
    kept: list[Record] = []
    duplicates = 0
    for record in records:
        digest = key_digest(record.key or "")
        rereading = (
            cursor.reread_until is not None and offsets.get(id(record), 0) < cursor.reread_until
        )
        duplicate = False
        if fmt.natural_keys or rereading:
            duplicate = digest in seen or (fmt.natural_keys and digest in window)
        if rereading and not duplicate and cursor.horizon is not None:
            duplicate = record.timestamp is not None and record.timestamp <= cursor.horizon
        if not duplicate:
            window.add(digest)
            keys.append((digest, record.timestamp))
            kept.append(record)
        elif record.parts:
            duplicates += 1
    return kept, keys, duplicates


def _date_and_filter(
    records: list[Record], fallback: datetime, not_before: datetime | None
) -> tuple[list[Record], int, datetime | None]:
    """Give undated records the last known time; drop dialogue older than the cutoff."""
    kept: list[Record] = []
    dropped = 0
    last = fallback
    for record in records:
        if record.timestamp is None:
            record.timestamp = last
        last = record.timestamp
        if not_before is not None and record.parts and record.timestamp < not_before:
            dropped += 1
            continue
        kept.append(record)
    return kept, dropped, last if records else None


def read_document_file(fmt: DocumentFormat, arguments: ReadArguments) -> FileOutcome:
    """Read what is new in a whole-file document. Raise MalformedDocumentError or OSError."""
    path, status, cursor, options = (
        arguments.path,
        arguments.status,
        arguments.cursor,
        arguments.options,
    )
    with open_regular(path) as raw:
        identity, _ = identity_of(raw, status)
        state = cursor.state if cursor is not None else {}
        cutoff = cursor.not_before if cursor is not None else arguments.not_before
        resumable = (
            cursor is not None
            and cursor.identity == identity
            and cursor.size == status.st_size
            and cursor.mtime_ns == status.st_mtime_ns
        )
        start = cursor.position if cursor is not None and resumable else 0
        result = fmt.read(raw, start, state, budget=arguments.budget, not_before=cutoff)
    fallback = datetime.fromtimestamp(status.st_mtime, UTC)
    records, _, _ = _date_and_filter(result.records, fallback, None)
    context = FileContext(options.agent, options.routine, fmt.name, str(path), fallback)
    base = cursor or FileCursor(path=str(path), identity=identity)
    advanced = replace(
        base,
        path=str(path),
        position=result.position,
        state=result.state,
        not_before=cutoff,
    )
    return FileOutcome(
        cursor=_finished(advanced, identity, status, result.complete),
        conversations=assemble(records, context),
        consumed=result.bytes_read,
        malformed=result.malformed,
        before_since=result.before_since,
        at_eof=result.complete,
    )
