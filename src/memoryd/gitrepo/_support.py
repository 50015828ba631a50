"""Plain helpers of the git adapter that run no git: identity, status, path checks, finding the
repository a folder is in, and the reading of `git check-ignore --verbose` output.

They live apart from `memoryd.gitrepo._repository` (which, with `_process` and `_session`, runs
git) to keep that module about the adapter itself.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from memoryd.errors import GitError

# Present in the git directory while memoryd moves its branch and work tree to another commit
# (`memoryd.gitrepo._tree`); no commit is made until the move is finished.
SYNC_MARKER = "memoryd-sync.json"


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


def blob_name(data: bytes, like: str) -> str:
    """The object name git gives a file of `data`, hashed as `like` (an object name of the same
    repository: SHA-1, or SHA-256 when it is 64 digits long) was."""
    digest = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def clean_message(message: str) -> str:
    """A commit message as `git commit -m` records it by default (`--cleanup=whitespace`, as
    `git stripspace` does): trailing whitespace removed from every line, runs of empty lines
    made one, no empty line first or last, and a final newline; empty stays empty."""
    lines: list[str] = []
    for raw in message.split("\n"):
        line = raw.rstrip(_WHITESPACE)
        if line or (lines and lines[-1]):
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


# What git's own `isspace` takes for whitespace (its `sane_ctype`: not \v nor \f, nothing
# beyond ASCII).
_WHITESPACE = " \t\n\r"


@contextmanager
def nul_file(entries: list[str]) -> Iterator[BinaryIO]:
    """A NUL-separated list in an anonymous file, to feed git through stdin."""
    with tempfile.TemporaryFile() as handle:
        handle.write(b"".join(entry.encode("utf-8") + b"\0" for entry in entries))
        handle.flush()
        handle.seek(0)
        yield handle


def find_repository(start: Path) -> tuple[Path | None, Path] | None:
    """The repository `start` is in: (its work tree, None for a bare repository; its git
    directory), or None when `start` does not exist or is in no repository.

    Found without running git, the way GitPython's `Repo(start, search_parent_directories=True)`
    found it (memoryd used that before): from `start` upwards, the first folder with
    a `.git` directory or a `.git` file (`gitdir: <path>`, as a linked work tree or a submodule
    has) is the work tree; a folder that is itself a git directory is a bare repository unless
    its configuration says `core.bare = false` (then its parent is the work tree, or
    `core.worktree`). A `.git` that is neither stops the search, as it stops GitPython's.
    """
    if not os.path.exists(start):
        return None
    current = os.path.abspath(start)
    while True:
        dotgit = os.path.join(current, ".git")
        git_dir = dotgit if _is_git_dir(dotgit) else _linked_git_dir(dotgit)
        if git_dir is not None:
            return Path(current), Path(git_dir)
        if os.path.lexists(dotgit) and not os.path.isdir(dotgit):
            return None
        if _is_git_dir(current):
            return _own_work_tree(current), Path(current)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _is_git_dir(folder: str) -> bool:
    """Whether `folder` is a git directory: a HEAD naming a ref or a commit, and `objects` and
    `refs` in it (or in the common directory a linked work tree's `commondir` names)."""
    if not os.path.isdir(folder):
        return False
    head = os.path.join(folder, "HEAD")
    if os.path.islink(head):
        try:
            valid_head = os.readlink(head).startswith("refs/")
        except OSError:
            valid_head = False
    else:
        try:
            with open(head, "rb") as handle:
                text = handle.read(256)
        except OSError:
            valid_head = False
        else:
            valid_head = (
                text.startswith(b"ref:") and text[4:].lstrip().startswith(b"refs/")
            ) or bool(re.match(rb"(?:[0-9A-Fa-f]{64}|[0-9A-Fa-f]{40})", text))
    if not valid_head:
        return False
    common = folder
    try:
        named = os.fsdecode(Path(folder, "commondir").read_bytes()).rstrip("\r\n")
    except FileNotFoundError:
        if os.path.lexists(os.path.join(folder, "commondir")):
            return False
    except (OSError, UnicodeError):
        return False
    else:
        if not named:
            return False
        common = os.path.realpath(os.path.join(folder, named))
    return os.path.isdir(os.path.join(common, "objects")) and os.path.isdir(
        os.path.join(common, "refs")
    )


def _linked_git_dir(dotgit: str) -> str | None:
    """The git directory a `.git` file points at (`gitdir: <path>`), if it is one."""
    try:
        if not os.path.isfile(dotgit) or os.path.getsize(dotgit) > (1 << 20):
            return None
        text = os.fsdecode(Path(dotgit).read_bytes()).rstrip("\r\n")
    except (OSError, UnicodeError):
        return None
    if len(text) < 9 or not text.startswith("gitdir: "):
        return None
    target = os.path.normpath(os.path.join(os.path.dirname(dotgit), text[8:]))
    return target if _is_git_dir(target) else None


def _own_work_tree(git_dir: str) -> Path | None:
    """The work tree of a git directory reached directly (not through a `.git`): a linked work
    tree's own folder, else None when the configuration says `core.bare`, else `core.worktree`
    or the git directory's parent."""
    gitdir_file = os.path.join(git_dir, "gitdir")
    if os.path.isfile(gitdir_file) and os.path.isfile(os.path.join(git_dir, "commondir")):
        with open(gitdir_file, encoding="utf-8", errors="surrogateescape") as handle:
            pointer = handle.read().strip()
        if not os.path.isabs(pointer):
            pointer = os.path.normpath(os.path.join(git_dir, pointer))
        return Path(os.path.dirname(pointer))
    core = _core_config(os.path.join(git_dir, "config"))
    if core.get("bare", "false").lower() in ("true", "yes", "on", "1"):
        return None
    worktree = core.get("worktree")
    if worktree:
        return Path(os.path.normpath(os.path.join(git_dir, worktree)))
    return Path(os.path.dirname(git_dir))


def _core_config(path: str) -> dict[str, str]:
    """The `[core]` settings of a git configuration file (simple `key = value` lines)."""
    core: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return core
    section = ""
    for line in lines:
        text = line.strip()
        if text.startswith("["):
            section = text[1:].split("]", 1)[0].strip().lower()
        elif section == "core" and "=" in text and not text.startswith(("#", ";")):
            key, value = text.split("=", 1)
            core[key.strip().lower()] = value.split("#", 1)[0].split(";", 1)[0].strip().strip('"')
    return core


def find_work_tree(path: Path) -> Path | None:
    """Return the root of the git work tree containing `path`, or None if there is none.

    A path that does not exist yet belongs to the work tree of its nearest existing ancestor.
    """
    existing = path.resolve()
    while not existing.is_dir() and existing != existing.parent:
        existing = existing.parent
    found = find_repository(existing)
    if found is None or found[0] is None:
        return None  # in no repository, or in a bare one
    return found[0].resolve()
