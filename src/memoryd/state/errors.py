"""Errors of the state database, typed by what the caller can do about them.

`StateError` is the family root. A database written by a newer memoryd is refused
(`StateVersionError`) rather than guessed at; a file that is not memoryd's state database is
refused too (`StateCorruptError`). A database another process keeps locked past the busy timeout
is transient (`StateBusyError`): the work stops early and the next run continues. A call that
breaks the journal's state machine (answering a chunk never planned, committing one never
applied) is a programming error in the pipeline (`JournalStateError`).
"""

from __future__ import annotations

from pathlib import Path

from memoryd.errors import MemorydError, TransientError


class StateError(MemorydError):
    """The state database cannot be used as asked."""


class StateVersionError(StateError):
    """The database was written by a newer memoryd: its schema version is unknown here."""

    def __init__(self, path: Path, found: int, supported: int) -> None:
        self.path = path
        self.found = found
        self.supported = supported
        super().__init__(
            f"{path} has state schema version {found}, but this memoryd knows versions up to "
            f"{supported}; upgrade memoryd (the database is left untouched)"
        )


class StateCorruptError(StateError):
    """The file is not a memoryd state database (or not a database at all)."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"{path}: {reason} (the next heartbeat or rewrite moves it aside and rebuilds the"
            " state from the store)"
        )


class StateBusyError(StateError, TransientError):
    """Another process held the database locked for longer than the busy timeout."""


class StateValueError(StateError, ValueError):
    """A value handed to the state database is malformed (a naive datetime, invalid JSON)."""


class JournalStateError(StateError):
    """A chunk was moved along the journal in an order the state machine does not allow."""

    def __init__(self, chunk_key: str, current: str | None, wanted: str) -> None:
        self.chunk_key = chunk_key
        self.current = current
        self.wanted = wanted
        where = f"in state {current!r}" if current else "unknown to the journal"
        super().__init__(f"chunk {chunk_key!r} is {where}; it cannot become {wanted!r}")
