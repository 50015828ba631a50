"""Hostile entries in the store, set aside so that one planted link does not stop all memory.

A symlink, FIFO, socket or device inside the store is never followed nor written through
(`StorePaths.resolve` refuses it). Left where it is, every heartbeat that touches its entity
would fail; so memoryd moves it out of the work tree into the repository's git directory,
`<git dir>/memoryd/set-aside/<UTC time>-<path with / as __>`, logs `store.path_set_aside`, and
files the rest. Nothing is lost and nothing is followed: a link is moved as a link, never read
through. `memoryd status` lists what is there (exit 78) until the operator has looked at it and
removed the folder.
"""

from __future__ import annotations

import errno
import os
import stat
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import structlog

from memoryd.errors import PathEscapeError
from memoryd.gitrepo import GitStore

log = structlog.get_logger("memoryd.store.unit")

SET_ASIDE_FOLDER = ("memoryd", "set-aside")


def entry_kind(mode: int) -> str | None:
    """What a hostile entry is (None for a regular file or a folder)."""
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def hostile_entry(root: Path, relative: str) -> tuple[str, str] | None:
    """The first component of `relative` (store-relative) that is a hostile entry on disk, with
    its kind, or None."""
    current = root
    parts = PurePosixPath(relative).parts
    for index, part in enumerate(parts):
        if part in ("", ".", "..") or "\x00" in part:
            return None
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return None
        kind = entry_kind(mode)
        if kind is not None:
            return "/".join(parts[: index + 1]), kind
    return None


def set_aside(root: Path, key: str, kind: str, git_dir: Path, now: datetime) -> Path:
    """Move the hostile entry at `key` out of the store into the set-aside folder of `git_dir`;
    log `store.path_set_aside`; return where it went. A link is recreated there when the move
    crosses file systems; another special file is then only removed (it holds no content)."""
    folder = git_dir.joinpath(*SET_ASIDE_FOLDER)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{now.strftime('%Y%m%dT%H%M%SZ')}-{key.replace('/', '__')}"
    source = root / key
    try:
        os.rename(source, target)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        if kind == "symlink":
            os.symlink(os.readlink(source), target)
        else:
            target.write_text(f"a {kind} was removed from {key}\n", encoding="utf-8")
        os.unlink(source)
    log.warning("store.path_set_aside", path=key, kind=kind, moved_to=str(target))
    return target


def set_aside_entries(git_dir: Path) -> list[str]:
    """The names in the set-aside folder of `git_dir`, sorted (empty when there is none)."""
    try:
        return sorted(os.listdir(git_dir.joinpath(*SET_ASIDE_FOLDER)))
    except OSError:
        return []


def set_aside_hostile(git: GitStore, relative: str | Path) -> bool:
    """Set aside the hostile entry on the way to `relative` (store-relative, or absolute inside
    the store), if there is one; return whether something was moved."""
    root = git.store_root.resolve()
    key = str(relative)
    if Path(key).is_absolute():
        try:
            key = Path(key).relative_to(root).as_posix()
        except ValueError:
            return False
    found = hostile_entry(root, key)
    if found is None:
        return False
    _work_tree, git_dir, _prefix = git.locations()
    set_aside(root, found[0], found[1], git_dir, git.now() or datetime.now(UTC))
    return True


def set_aside_listing(git: GitStore) -> list[str]:
    """What was set aside in the store's repository and not yet cleared by the operator."""
    _work_tree, git_dir, _prefix = git.locations()
    return set_aside_entries(git_dir)


def meets_hostile_entry(error: PathEscapeError) -> bool:
    """Whether `error` was raised by a hostile entry on disk (a link or FIFO to set aside),
    rather than by a path that is wrong in itself."""
    root, path = Path(error.root), Path(error.path)
    if path.is_absolute():
        try:
            path = path.relative_to(root)
        except ValueError:
            return False
    return hostile_entry(root, path.as_posix()) is not None
