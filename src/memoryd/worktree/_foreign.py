"""Edits others left uncommitted in the store: committed first, in a commit of their own.

People and other tools edit the store too. Before memoryd commits its own changes, files that
were modified, added or deleted under the store folder and left uncommitted are committed in one
commit of their own, after a secret scan: a file in which the injected scanner finds a secret is
left uncommitted, reported and logged (`store.foreign_edit_secret`, with the path and the kinds,
never the value).

Decisions:
- memoryd's own half-done work is not a foreign edit: a file whose current digest equals the
  digest memoryd journaled for it (`UnitOfWork.plan()`; ABSENT for a planned removal) is left
  alone and reported as `own`, for the caller's recovery to finish;
- binary (non-UTF-8) files are scanned in their lossy UTF-8 decoding, in which any ASCII secret
  is still visible, and committed when clean: a picture dropped in the store is kept like any
  other edit;
- files over `max_bytes` are not read at all and stay uncommitted, reported as `too-large`;
- a symlink is scanned by its target text, never followed, and committed as a link;
- deletions need no scan; memoryd's temporary files (`.*.tmp`) are never foreign edits; untracked
  ones (a write interrupted by a crash) are removed.

Known limit: a file changed again between the scan and `git add` is committed unscanned; memoryd
holds its single-writer lock, so only a person editing at that very moment can cause it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import structlog

from memoryd.gitrepo import GitStore
from memoryd.worktree._digest import ABSENT, disk_digest, is_temporary, read_bytes_nofollow
from memoryd.worktree._hostile import set_aside_hostile
from memoryd.worktree._paths import StorePaths

log = structlog.get_logger("memoryd.store.foreign")  # the name its events always had

FOREIGN_EDITS_MESSAGE = "Record edits made in the store outside memoryd"
MAX_SCANNED_BYTES = 8 * 1024 * 1024
TOO_LARGE = "too-large"


@dataclass(frozen=True)
class WithheldFile:
    """A foreign edit left uncommitted, and why: the secret kinds found, or `too-large`."""

    path: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class ForeignEditsResult:
    """What `commit_foreign_edits` did: its commit (None if none), the paths it committed and the
    files it withheld."""

    commit: str | None
    committed: tuple[str, ...]
    withheld: tuple[WithheldFile, ...]
    swept: tuple[str, ...] = ()  # memoryd's leftover temporary files, removed


def commit_foreign_edits(
    git: GitStore,
    scanner: Callable[[str], list[str]],
    *,
    message: str = FOREIGN_EDITS_MESSAGE,
    max_bytes: int = MAX_SCANNED_BYTES,
) -> ForeignEditsResult:
    """Commit what others changed in the store and left uncommitted; say what was done.

    `scanner(text)` returns the kinds of secret found in a text. memoryd's own half-done writes
    must have been undone first (`undo_own_writes`, below): any change here is
    taken for someone else's.
    """
    status = git.status()
    committed: list[str] = []
    withheld: list[WithheldFile] = []
    # memoryd's own temporary files that an interrupted write left are removed here, from the
    # status already at hand: a cost in what changed, where a sweep of the store grows with it.
    swept = _sweep(git.store_root, status.untracked)
    changed = sorted({*status.modified, *status.untracked, *status.deleted})
    # A planted link or FIFO is moved out of the store first, never committed; the tracked files
    # it stood in for (a link in place of an entity's folder) are put back as HEAD has them.
    aside = [key for key in changed if set_aside_hostile(git, key)]
    hidden = [
        key
        for key in status.deleted
        if key not in aside and any(key.startswith(f"{entry}/") for entry in aside)
    ]
    if hidden:
        git.restore(hidden)
    for key in changed:
        if is_temporary(PurePosixPath(key).name) or key in hidden:
            continue
        if key in aside and key in status.untracked:
            continue
        path = git.store_root / key
        digest = disk_digest(path)
        reasons = () if digest == ABSENT else _scan(path, scanner, max_bytes)
        if not reasons:
            committed.append(key)
            continue
        withheld.append(WithheldFile(key, reasons))
        if reasons == (TOO_LARGE,):
            log.warning("store.foreign_edit_too_large", path=key, max_bytes=max_bytes)
        else:
            log.warning("store.foreign_edit_secret", path=key, kinds=list(reasons))
    sha = git.commit(committed, message) if committed else None
    if sha is not None:
        log.info("store.foreign_edits_committed", commit=sha, paths=len(committed))
    return ForeignEditsResult(sha, tuple(committed), tuple(withheld), swept)


def _sweep(root: Path, untracked: Iterable[str]) -> tuple[str, ...]:
    swept = []
    for key in untracked:
        path = root / key
        if is_temporary(PurePosixPath(key).name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            swept.append(key)
    if swept:
        log.info("store.temporaries_swept", count=len(swept))
    return tuple(swept)


def _scan(path: Path, scanner: Callable[[str], list[str]], max_bytes: int) -> tuple[str, ...]:
    if path.is_symlink():
        text = os.readlink(path)
    else:
        if path.stat().st_size > max_bytes:
            return (TOO_LARGE,)
        text = read_bytes_nofollow(path).decode("utf-8", errors="replace")
    return tuple(sorted(set(scanner(text))))


def undo_own_writes(git: GitStore, writes: Iterable[tuple[str, str]]) -> list[str]:
    """Put back as HEAD has them the files of `writes` (store-relative path, planned digest)
    that still hold exactly what memoryd planned: its own half-done writes of a job killed
    before its commit. A planned removal (ABSENT) counts as memoryd's when the file is gone.
    Anything else (a file others changed, one memoryd never reached) is left alone. Return the
    paths restored."""
    paths = StorePaths(git.store_root)
    ours = [path for path, digest in writes if disk_digest(paths.resolve(path)) == digest]
    return git.restore(ours)
