"""The store's files as they are on disk, for readers: a `FileTransaction` that cannot write.

Readers see the work tree, not a commit: a heartbeat writes its files and then commits, so a
reader may see a heartbeat's files a moment before its commit, never a half-written file (every
store write is an atomic rename). A path that leads outside the store (through `..` or a
symbolic link) reads as absent.
"""

from __future__ import annotations

from pathlib import Path

from memoryd.errors import CorruptFileError, StoreError


class ReadOnlyStore:
    """The store at `root`, read-only (`FileTransaction`'s reading half)."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    @property
    def root(self) -> Path:
        return self._root

    def _path(self, relative: str) -> Path | None:
        path = (self._root / relative).resolve()
        return path if path == self._root or path.is_relative_to(self._root) else None

    def read_text(self, relative: str) -> str | None:
        path = self._path(relative)
        if path is None or not path.is_file():
            return None
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise CorruptFileError(path, "not UTF-8 text") from None
        except OSError:
            return None

    def exists(self, relative: str) -> bool:
        path = self._path(relative)
        return path is not None and path.exists()

    def list_dir(self, relative: str) -> list[str]:
        path = self._path(relative)
        if path is None or not path.is_dir():
            return []
        return sorted(entry.name for entry in path.iterdir())

    def write_text(self, relative: str, text: str) -> None:
        raise StoreError(f"readers do not write to the store ({relative})")

    def move_dir(self, source: str, destination: str) -> None:
        raise StoreError(f"readers do not write to the store ({source})")

    def remove(self, relative: str) -> None:
        raise StoreError(f"readers do not write to the store ({relative})")
