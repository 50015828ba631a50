"""What a transcript format plugs into the reading machinery.

Two kinds of format exist. A `LineFormat` (Claude Code, Codex, OpenClaw, Paperclip, JSONL,
Markdown) is appended line by line: the machinery tails it, and the format only decodes one
complete line at a time into `Record`s through a per-read `Decoder` that may carry state between
reads (JSON-serializable, stored in the cursor). A `DocumentFormat` (the ChatGPT export) is
rewritten whole and tracks what it has yielded by its own ids.

Formats never touch cursors, stat files or log: they decode bytes. That keeps each one small and
testable on its own.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from memoryd.errors import MemorydError
from memoryd.sources.records import Record


class MalformedDocumentError(MemorydError):
    """A whole-file document cannot be parsed; the file is skipped and retried later."""


class Decoder(ABC):
    """Decodes the lines of one file during one read.

    What a decoder meets but cannot read (an event of an unknown shape, a record it knows it
    must not read as dialogue but cannot read otherwise) is noted with `note_skipped`: the
    reader logs it as `source.skipped` and `memoryd status` shows the running count, so nothing
    is ever read as silently empty.
    """

    _skips: dict[str, int] | None = None

    def note_skipped(self, reason: str, count: int = 1) -> None:
        """Count one more record skipped for `reason` in this read."""
        if self._skips is None:
            self._skips = {}
        self._skips[reason] = self._skips.get(reason, 0) + count

    def skipped(self) -> dict[str, int]:
        """The records skipped in this read, by reason."""
        return dict(self._skips or {})

    @abstractmethod
    def decode(self, raw: bytes, line: int) -> list[Record]:
        """Turn one complete line into records. Raise MalformedLineError for a bad line."""

    def flush(self) -> list[Record]:
        """Return what is still open when the read ends (a message without a closing line)."""
        return []

    def finish(self, records: list[Record]) -> list[Record]:
        """Post-process this read's records after de-duplication and branch pruning."""
        return records

    def state(self) -> dict[str, Any]:
        """The JSON-serializable state the next read of this file starts from."""
        return {}


class LineFormat(ABC):
    """A transcript format appended one line per record."""

    name: ClassVar[str]
    # True when `Record.key` is a unique id: duplicates are then dropped on every read, not only
    # when a rewritten file is read again.
    natural_keys: ClassVar[bool] = False
    # True when records form a tree whose abandoned branches must be dropped.
    tree: ClassVar[bool] = False

    def accepts(self, folder: str, name: str) -> bool:
        """Whether a file found under a source directory holds transcripts of this format."""
        return name.endswith(".jsonl")

    def select(self, paths: list[str]) -> list[str]:
        """Drop files that duplicate others among those discovered (default: none)."""
        return paths

    def lineage(self, path: Path) -> str | None:
        """A name shared by files that are one log under different paths (default: none)."""
        return None

    def compressed(self, path: Path) -> bool:
        """Whether the file is gzipped (positions then count decompressed bytes)."""
        return False

    def refusal(self, path: Path, opened: os.stat_result) -> str | None:
        """Why the opened file (its `fstat`) is refused as a whole, never read; None to read
        it (default)."""
        return None

    @abstractmethod
    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        """Return a decoder for one read of `path`, starting from the stored `state`."""


@dataclass
class DocumentRead:
    """What one read of a whole-file document produced."""

    records: list[Record]
    state: dict[str, Any]
    position: int  # offset after the last object fully handled
    complete: bool  # the document was read to its end
    bytes_read: int = 0
    malformed: int = 0
    before_since: int = 0
    notes: list[str] = field(default_factory=list)


class DocumentFormat(ABC):
    """A transcript format rewritten whole, read by its own ids."""

    name: ClassVar[str]

    @abstractmethod
    def accepts(self, folder: str, name: str) -> bool:
        """Whether a file found under a source directory is a document of this format."""

    @abstractmethod
    def read(
        self,
        stream: BinaryIO,
        start: int,
        state: Mapping[str, Any],
        *,
        budget: int,
        not_before: datetime | None,
    ) -> DocumentRead:
        """Read objects from `start` (0 or a resume offset), yielding only new content.

        Raise MalformedDocumentError when the document itself is broken.
        """


Format = LineFormat | DocumentFormat
