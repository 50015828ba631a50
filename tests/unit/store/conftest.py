"""A small real FileTransaction for the store's content modules: it works on a folder directly.

`DirTransaction` reads and writes the files under a temporary store root at once, through
`StorePaths` confinement and the atomic-write helper, so tests see exactly the bytes a store
module produced. It records what was written, so a test can say "nothing was written".
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest

from memoryd.errors import CorruptFileError, StoreError
from memoryd.store.catalog import EntityCatalog
from memoryd.worktree import StorePaths, atomic_write_text


class DirTransaction:
    """FileTransaction over a folder, without staging: every write lands immediately."""

    def __init__(self, root: Path) -> None:
        self._paths = StorePaths(root)
        self.written: list[str] = []
        self.moved: list[tuple[str, str]] = []

    @property
    def root(self) -> Path:
        return self._paths.root

    def read_text(self, relative: str) -> str | None:
        path = self._paths.resolve(relative)
        if not path.is_file():
            return None
        try:
            return path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptFileError(path, "not UTF-8") from None

    def write_text(self, relative: str, text: str) -> None:
        atomic_write_text(self._paths.resolve(relative), text)
        self.written.append(relative)

    def exists(self, relative: str) -> bool:
        return self._paths.resolve(relative).exists()

    def list_dir(self, relative: str) -> list[str]:
        path = self._paths.resolve(relative)
        return sorted(os.listdir(path)) if path.is_dir() else []

    def move_dir(self, source: str, destination: str) -> None:
        origin, target = self._paths.resolve(source), self._paths.resolve(destination)
        if target.exists():
            raise StoreError(f"{destination} exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        origin.rename(target)
        self.moved.append((source, destination))

    def remove(self, relative: str) -> None:
        self._paths.resolve(relative).unlink(missing_ok=True)


class MemoryTransaction:
    """FileTransaction over a dict of texts, for tests that create thousands of files."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    @property
    def root(self) -> Path:
        return Path("/nonexistent-memory-store")

    def read_text(self, relative: str) -> str | None:
        return self.files.get(relative)

    def write_text(self, relative: str, text: str) -> None:
        self.files[relative] = text

    def exists(self, relative: str) -> bool:
        return relative in self.files or any(k.startswith(relative + "/") for k in self.files)

    def list_dir(self, relative: str) -> list[str]:
        prefix = relative + "/"
        return sorted({k[len(prefix) :].split("/")[0] for k in self.files if k.startswith(prefix)})

    def move_dir(self, source: str, destination: str) -> None:
        if self.exists(destination):
            raise StoreError(f"{destination} exists")
        prefix = source + "/"
        for key in [k for k in self.files if k.startswith(prefix)]:
            self.files[destination + "/" + key[len(prefix) :]] = self.files.pop(key)

    def remove(self, relative: str) -> None:
        self.files.pop(relative, None)


TODAY = date(2026, 1, 20)


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    return root


@pytest.fixture
def tx(store_root: Path) -> DirTransaction:
    return DirTransaction(store_root)


@pytest.fixture
def catalog(tx: DirTransaction) -> EntityCatalog:
    return EntityCatalog.load(tx)
