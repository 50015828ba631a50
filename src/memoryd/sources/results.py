"""What a read of one source returns, and what `memoryd status` is shown of it."""

from __future__ import annotations

from dataclasses import dataclass, field

from memoryd.sources._files import FileOutcome
from memoryd.sources.cursor import FileCursor
from memoryd.sources.model import Conversation


@dataclass(frozen=True)
class SkipReport:
    """A file that could not be read this time; it keeps its cursor and is tried again."""

    path: str
    reason: str


@dataclass
class ReadStats:
    """Counts for one read, for logs and `memoryd status`."""

    files_seen: int = 0
    files_read: int = 0
    files_restarted: int = 0  # replaced, truncated or rewritten, read again from the start
    files_forgotten: int = 0
    files_moved: int = 0  # followed to a new path (rotation, gzipped run log)
    bytes_read: int = 0
    lines_read: int = 0
    malformed_lines: int = 0
    long_lines: int = 0
    duplicates_dropped: int = 0
    before_since_dropped: int = 0
    turns: int = 0

    def add(self, outcome: FileOutcome) -> None:
        self.files_read += 1
        self.files_restarted += outcome.restarted is not None
        self.bytes_read += outcome.consumed
        self.lines_read += outcome.lines
        self.malformed_lines += outcome.malformed
        self.long_lines += outcome.long_lines
        self.duplicates_dropped += outcome.duplicates
        self.before_since_dropped += outcome.before_since
        self.turns += sum(len(c.turns) for c in outcome.conversations)


@dataclass
class ReadResult:
    """What a read found. `cursors` replaces the source's cursors once the caller has committed."""

    conversations: list[Conversation]
    cursors: dict[str, FileCursor]
    skipped: list[SkipReport] = field(default_factory=list)
    stats: ReadStats = field(default_factory=ReadStats)
    more: bool = False  # the byte budget ran out before everything new was read
    unreadable: str | None = None  # why the source path itself could not be read, if so
    # Files whose stored cursor stands as it is (read with `StoredCursors`: see `read`).
    kept: list[str] = field(default_factory=list)
    # path -> over-long lines dropped unread from it by this read (`source.line_dropped`)
    dropped: dict[str, int] = field(default_factory=dict)


@dataclass
class LagReport:
    """What `memoryd status` shows of a source: bytes not read yet, and what cannot be read."""

    lags: dict[str, int]
    skipped: list[SkipReport] = field(default_factory=list)
    unreadable: str | None = None
