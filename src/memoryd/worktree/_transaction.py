"""The interface store modules use to read and change files: a transaction over the store.

Store modules (facts, entities, notes, tacit, skills) never touch the file system themselves:
they read through a `FileTransaction`, which remembers what each file held when it was read, and
stage their changes in it. The unit of work (`memoryd.worktree._unit`) implements it: it applies the
staged changes with atomic writes and commits them in one git commit, after checking that no file
changed on disk since it was read.

Paths are store-relative POSIX strings (`life/areas/people/jane-doe/items.json`); the
transaction confines them to the store (see `memoryd.worktree._paths.StorePaths`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class FileTransaction(Protocol):
    @property
    def root(self) -> Path:
        """The store's root folder (resolved)."""
        ...

    def read_text(self, relative: str) -> str | None:
        """Return the file's text as this transaction sees it (staged changes included), or None
        when it does not exist. Raise CorruptFileError when it is not UTF-8."""
        ...

    def write_text(self, relative: str, text: str) -> None:
        """Stage `text` as the file's new content. Raise PathEscapeError outside the store."""
        ...

    def exists(self, relative: str) -> bool:
        """Whether the file or folder exists as this transaction sees it."""
        ...

    def list_dir(self, relative: str) -> list[str]:
        """Sorted names of the entries of a folder as this transaction sees it ([] if absent)."""
        ...

    def move_dir(self, source: str, destination: str) -> None:
        """Stage moving a whole folder (git history follows: the commit records a rename).
        Raise StoreError if the destination exists."""
        ...

    def remove(self, relative: str) -> None:
        """Stage deleting a file (committed as a deletion; facts are never removed this way,
        only files memoryd itself merged away). Removing a missing file does nothing."""
        ...
