"""How `GitStore` reads and changes the store's files against HEAD, inside one operation's
`Session`: the status of the store folder, the commit of exactly the paths memoryd names, and
the undoing of memoryd's own half-done writes. Kept apart from the adapter so that it stays a
list of operations and this, the staging logic, can be read on its own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import structlog

from memoryd.gitrepo._session import Session
from memoryd.gitrepo._support import StoreStatus, remove_empty_parents, under

log = structlog.get_logger("memoryd.store.git")  # the adapter's logger: its events keep the name


def _mode(path: Path) -> int | None:
    """The mode of what is at `path` (a link not followed), or None when nothing is."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _one_file(mode: int) -> bool:
    """Whether a path of this mode is staged as one index entry: a regular file or a link."""
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def read_status(session: Session) -> StoreStatus:
    """Uncommitted changes under the store folder; see `GitStore.status`."""
    output = session.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames",
        "--", *session.store_pathspec(),
    )  # fmt: skip
    if any(r.startswith("?? ") and r.endswith("/") for r in output.split("\0")):
        output = session.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
            "--", *session.store_pathspec(),
            optional_locks=False,
        )  # fmt: skip
    modified: list[str] = []
    untracked: list[str] = []
    deleted: list[str] = []
    for record in output.split("\0"):
        if len(record) < 4:
            continue
        code, path = record[:2], record[3:]
        relative = session.to_store_relative(path)
        if relative is None:
            continue
        if code == "??":
            untracked.append(relative)
        elif "D" in code:
            deleted.append(relative)
        else:
            modified.append(relative)
    return StoreStatus(tuple(sorted(modified)), tuple(sorted(untracked)), tuple(sorted(deleted)))


def commit_paths(
    session: Session, relative: list[str], message: str
) -> tuple[str | None, list[str]] | None:
    """Commit exactly the store-relative paths `relative` (see `GitStore.commit`): the new
    commit's sha and the repository paths it changed, or None when there is nothing to commit."""
    session.check_not_ignored()
    session.check_writable()
    session.clear_index_lock()
    pathspecs = [session.to_repo_relative(p) for p in relative]
    modes = {spec: _mode(session.work_tree / spec) for spec in pathspecs}
    # The index is listed only for paths gone from disk (a deletion or a move): on most
    # commits every path exists, and listing a big store's index costs more than them.
    gone = [spec for spec, mode in modes.items() if mode is None]
    known = session.tracked(gone) if gone else set()
    stageable = [
        spec
        for spec in pathspecs
        if spec not in gone or any(k == spec or k.startswith(spec + "/") for k in known)
    ]
    if not stageable:
        return None
    # As `add --force`: a path memoryd names is store content even if a .gitignore
    # matches it (`*.json`); the store folder itself was checked above not to be ignored.
    session.stage(
        stageable,
        files_only=all(
            spec in known if (mode := modes[spec]) is None else _one_file(mode)
            for spec in stageable
        ),
    )
    head = session.head()
    staged = None if head is None else session.staged_everywhere(head)
    changed = (
        session.staged_changes(stageable) if staged is None else sorted(under(staged, stageable))
    )
    if not changed:
        return None
    if head is not None and staged == set(changed):
        # Nothing else is staged: the index is HEAD plus these paths, and its tree is
        # the commit's (see `commit_index`), without `--only`'s temporary index.
        sha: str | None = session.commit_index(message, head)
    else:
        session.run_with_pathspecs(
            ["commit", "--quiet", "--no-verify", "--only", "-m", message], changed
        )
        sha = session.head()
    return sha, changed


def restore_paths(session: Session, relative: list[str], store_root: Path) -> None:
    """Put the store-relative files `relative` back as HEAD has them; see `GitStore.restore`."""
    session.clear_index_lock()
    pathspecs = {p: session.to_repo_relative(p) for p in relative}
    in_head: set[str] = set()
    if session.head() is not None:
        listing = session.run(
            "ls-tree",
            "-r",
            "-z",
            "--name-only",
            "HEAD",
            "--",
            *session.store_pathspec(),
            optional_locks=False,
        )
        in_head = {entry for entry in listing.split("\0") if entry}
    tracked = [spec for spec in pathspecs.values() if spec in in_head]
    if tracked:
        session.run_with_pathspecs(["checkout", "HEAD"], tracked)
    for store_path, spec in pathspecs.items():
        if spec not in in_head:
            target = session.work_tree / spec
            if target.is_file() or target.is_symlink():
                target.unlink()
                log.info("store.restored_removed", path=store_path)
                remove_empty_parents(target.parent, store_root)
