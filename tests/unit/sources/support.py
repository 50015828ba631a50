"""Shared helpers for the source reader tests: whole-source reads.

The shared real samples are located by `tests.shared_samples`, the synthetic transcripts are
written by `tests.fakes.transcripts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from memoryd.settings import SourceSettings
from memoryd.sources.cursor import FileCursor
from memoryd.sources.model import Turn
from memoryd.sources.reader import DEFAULT_MAX_BYTES, ReadResult, SourceReader


def make_reader(fmt: str, path: Path | str, *, routine: str | None = None) -> SourceReader:
    return SourceReader("tester", SourceSettings(format=fmt, path=str(path), routine=routine))


def read_once(
    reader: SourceReader,
    cursors: Mapping[str, FileCursor] | None = None,
    *,
    since: datetime | None = None,
    first_sight: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ReadResult:
    cursors = cursors or {}
    sight = first_sight if first_sight is not None else not cursors
    return reader.read(cursors, since=since, first_sight=sight, max_bytes=max_bytes)


def all_turns(result: ReadResult) -> list[Turn]:
    return [turn for conversation in result.conversations for turn in conversation.turns]


def texts(result: ReadResult, role: str | None = None) -> list[str]:
    return [turn.text for turn in all_turns(result) if role is None or turn.role == role]


def read_until_done(
    reader: SourceReader,
    cursors: Mapping[str, FileCursor] | None = None,
    *,
    since: datetime | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[list[str], ReadResult, int]:
    """Read again while the byte budget left something: (all texts, last result, reads made)."""
    result = read_once(reader, cursors, since=since, max_bytes=max_bytes)
    collected = texts(result)
    reads = 1
    while result.more:
        result = read_once(reader, result.cursors, first_sight=False, max_bytes=max_bytes)
        collected += texts(result)
        reads += 1
    return collected, result, reads
