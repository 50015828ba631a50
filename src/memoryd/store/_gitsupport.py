"""Plain helpers of the git adapter that need no GitPython: identity, status, path checks, and
the reading of `git check-ignore --verbose` output.

They live apart from `memoryd.store.git` (still the only module importing GitPython) to keep
that module about the adapter itself.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from memoryd.errors import GitError


@dataclass(frozen=True)
class GitIdentity:
    """Who memoryd's commits are by (config `git.author_name` / `git.author_email`)."""

    name: str
    email: str


@dataclass(frozen=True)
class StoreStatus:
    """Uncommitted changes under the store folder, as sorted store-relative POSIX paths.

    `modified` includes files staged as added; renames show as a deletion plus an untracked file.
    """

    modified: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.modified or self.untracked or self.deleted)


@dataclass(frozen=True)
class IgnoreRule:
    """The ignore rule that excludes a path: the pattern, and where it is written (`file:line`)."""

    pattern: str
    source: str


def parse_ignore_rule(output: str, work_tree: Path) -> IgnoreRule | None:
    """Given the output of `git check-ignore --verbose --stdin -z` for one path, return the rule
    that ignores it, or None when it is not ignored.

    Records are `source NUL line NUL pattern NUL path NUL`. With --verbose git also reports a
    matching negated pattern (`!keep`), which means the path is *not* ignored. A rule file named
    relative to the work tree (`.gitignore`, `sub/.gitignore`, `.git/info/exclude`) is given as an
    absolute path, so the message says which file to edit wherever it is read.
    """
    fields = output.split("\0")
    if len(fields) < 4 or not fields[2] or fields[2].startswith("!"):
        return None
    source, line, pattern = fields[0], fields[1], fields[2]
    location = Path(source) if Path(source).is_absolute() else work_tree / source
    return IgnoreRule(pattern, f"{location}:{line}")


def under(entries: set[str], pathspecs: list[str]) -> set[str]:
    """The entries equal to, or inside a folder named by, one of the pathspecs."""
    wanted = set(pathspecs)
    return {
        entry
        for entry in entries
        if entry in wanted
        or any(
            "/".join(entry.split("/")[:depth]) in wanted for depth in range(1, entry.count("/") + 1)
        )
    }


def remove_empty_parents(folder: Path, root: Path) -> None:
    """Remove `folder` and its parents up to (not including) `root` while they are empty, so an
    undone write leaves no folder behind (an empty entity folder would still hold its slug)."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return  # not empty (or gone): stop here
        folder = folder.parent


def checked_relative(path: str) -> str:
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or any(p in ("..", ".", "") for p in pure.parts):
        raise GitError(f"refusing to commit {path!r}: not a plain path inside the store")
    if pure.parts[0] == ".git":
        raise GitError(f"refusing to commit {path!r}: inside .git")
    return pure.as_posix()


@contextmanager
def nul_file(entries: list[str]) -> Iterator[BinaryIO]:
    """A NUL-separated list in an anonymous file, to feed git through stdin."""
    with tempfile.TemporaryFile() as handle:
        handle.write(b"".join(entry.encode("utf-8") + b"\0" for entry in entries))
        handle.flush()
        handle.seek(0)
        yield handle
