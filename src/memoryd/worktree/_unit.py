"""The unit of work: staged store changes, applied atomically and committed in one git commit.

`UnitOfWork` implements `FileTransaction`. Reads go to disk once and remember a digest of what
they saw; writes and folder moves are staged in memory, and every read sees them. Nothing touches
the disk until `apply_and_commit`, which

1. checks that every file read is still what it was (else ConcurrentEditError, nothing written,
   and the caller re-plans from a fresh unit);
2. renames moved files (a folder move is per file, so git sees deletion + addition with the same
   content and records a rename), then writes changed files with atomic writes, skipping files
   whose bytes are already on disk;
3. commits exactly the staged paths in one commit, the message followed by git trailers.

Every path is confined by `StorePaths`: a path that escapes the store, or passes through a symlink
inside it, raises PathEscapeError, on reads as on writes, so a planted link never redirects a
write nor smuggles an outside file into the store. Staged paths already on disk with the same
bytes are still handed to git: a write left uncommitted by a killed run is committed by its
re-run, and a path identical to HEAD yields no commit at all.

`plan()` lists the pending disk changes with the digest of the new content, for the caller's
journal; `commit_foreign_edits` (`memoryd.worktree._foreign`) uses such a journal to tell memoryd's
own half-done work from edits others left in the store.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import structlog

from memoryd.errors import ConcurrentEditError, CorruptFileError, StoreError
from memoryd.gitrepo import GitStore
from memoryd.worktree._atomic import atomic_write_bytes, fsync_directory
from memoryd.worktree._commit_scan import withheld_files
from memoryd.worktree._digest import (
    ABSENT,
    PlannedWrite,
    content_digest,
    disk_digest,
    is_temporary,
    read_bytes_nofollow,
)
from memoryd.worktree._foreign import (
    FOREIGN_EDITS_MESSAGE,
    MAX_SCANNED_BYTES,
    ForeignEditsResult,
    WithheldFile,
    commit_foreign_edits,
    undo_own_writes,
)
from memoryd.worktree._paths import StorePaths
from memoryd.worktree._trailers import RUN_TRAILER, with_trailers

log = structlog.get_logger("memoryd.store.unit")  # the name its events always had

__all__ = [
    "ABSENT",
    "RUN_TRAILER",
    "ForeignEditsResult",
    "PlannedWrite",
    "UnitOfWork",
    "content_digest",
    "disk_digest",
    "undo_own_writes",
    "with_trailers",
]


@dataclass
class _Staged:
    """What a path will hold: the file now at `origin` moved here, and/or new `text`."""

    origin: str | None
    text: str | None


class UnitOfWork:
    """One planned change of the store (a FileTransaction), applied and committed once."""

    def __init__(self, git: GitStore) -> None:
        self._git = git
        self._paths = StorePaths(git.store_root)
        self._seen: dict[str, str] = {}  # path -> digest when first read (ABSENT if missing)
        self._seen_text: dict[str, str | None] = {}
        self._staged: dict[str, _Staged] = {}  # final path -> what it will hold
        self._removed: set[str] = set()  # on-disk files moved away from their path, or deleted
        self._deleted: set[str] = set()  # the removed files that go nowhere: unlinked on apply
        self._applied = False
        self.withheld: tuple[WithheldFile, ...] = ()  # written but not committed (see apply)

    @property
    def root(self) -> Path:
        return self._paths.root

    @property
    def git(self) -> GitStore:
        return self._git

    # -- reading through the staged view -------------------------------------------------

    def read_text(self, relative: str) -> str | None:
        key = self._key(relative)
        staged = self._staged.get(key)
        if staged is not None:
            if staged.text is not None:
                return staged.text
            assert staged.origin is not None  # noqa: S101 - a staged entry has one or the other
            return self._read_disk(staged.origin)
        if key in self._removed:
            return None
        return self._read_disk(key)

    def exists(self, relative: str) -> bool:
        key = self._key(relative, allow_root=True)
        if key in self._staged or self._staged_below(key):
            return True
        if key in self._removed:
            return False
        path = self._paths.resolve(key) if key else self.root
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(mode) and any(r.startswith(key + "/") for r in self._removed):
            return bool(self.list_dir(key))
        return True

    def list_dir(self, relative: str) -> list[str]:
        key = self._key(relative, allow_root=True)
        folder = self._paths.resolve(key) if key else self.root
        names: set[str] = set()
        if folder.is_dir():
            for entry in os.scandir(folder):
                child = _join(key, entry.name)
                if child == ".git" or is_temporary(entry.name):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if any(r.startswith(child + "/") for r in self._removed) and not self.exists(
                        child
                    ):
                        continue
                elif child in self._removed:
                    continue
                names.add(entry.name)
        prefix = key + "/" if key else ""
        for staged in self._staged:
            if staged.startswith(prefix):
                names.add(staged[len(prefix) :].split("/", 1)[0])
        return sorted(names)

    # -- staging ---------------------------------------------------------------------------

    def write_text(self, relative: str, text: str) -> None:
        self._check_open()
        key = self._key(relative)
        staged = self._staged.get(key)
        if staged is None:
            self._staged[key] = _Staged(origin=None, text=text)
        else:
            staged.text = text

    def move_dir(self, source: str, destination: str) -> None:
        self._check_open()
        source_key, destination_key = self._key(source), self._key(destination)
        if destination_key == source_key or destination_key.startswith(source_key + "/"):
            raise StoreError(f"cannot move {source} into itself ({destination})")
        if not self._is_dir(source_key):
            raise StoreError(f"cannot move {source}: no such folder in the store")
        if self.exists(destination_key):
            raise StoreError(f"cannot move {source} to {destination}: it already exists")
        for file_key in self._files_below(source_key):
            moved = self._staged.pop(file_key, None)
            on_disk_here = file_key not in self._removed and os.path.lexists(self.root / file_key)
            if moved is None:  # a file the view shows from disk
                moved = _Staged(origin=file_key, text=None)
            elif moved.origin is None and on_disk_here:
                moved.origin = file_key  # the file moves (history follows), then is rewritten
            if on_disk_here:
                self._remember(file_key)
                self._removed.add(file_key)
            self._staged[destination_key + file_key[len(source_key) :]] = moved

    def remove(self, relative: str) -> None:
        self._check_open()
        key = self._key(relative)
        staged = self._staged.pop(key, None)
        if staged is not None and staged.origin not in (None, key):
            self._deleted.add(staged.origin)  # a moved file removed at its new place
        if key not in self._removed and os.path.lexists(self._paths.resolve(key)):
            self._remember(key)
            self._removed.add(key)
            self._deleted.add(key)

    # -- applying --------------------------------------------------------------------------

    def plan(self) -> list[PlannedWrite]:
        """The disk changes `apply_and_commit` would make, sorted by path."""
        planned = []
        for key, staged in sorted(self._staged.items()):
            if staged.text is not None:
                new = content_digest(staged.text.encode("utf-8"))
            else:
                assert staged.origin is not None  # noqa: S101 - see _Staged
                new = self._seen[staged.origin]
            if staged.origin not in (None, key) or new != disk_digest(self.root / key):
                planned.append(PlannedWrite(key, new))
        planned.extend(
            PlannedWrite(key, ABSENT)
            for key in sorted(self._removed - set(self._staged))
            if os.path.lexists(self.root / key)
        )
        return sorted(planned)

    def apply_and_commit(
        self,
        message: str,
        trailers: Mapping[str, str],
        *,
        scanner: Callable[[str], list[str]] | None = None,
    ) -> str | None:
        """Write the staged changes and commit them; return the commit sha (None if no change).

        With `scanner`, a written file whose whole new text holds a secret is written but left
        out of the commit (`withheld`, logged as `store.commit_withheld`): memoryd's own text is
        redacted, so such a secret came from someone's uncommitted edit of that file, which the
        foreign-edits scan had already withheld; committing memoryd's change to the file would
        carry it into history. The file stays on disk, nothing is lost, and it is committed once
        the secret is gone.

        Raise ConcurrentEditError, writing nothing, when a file read has changed on disk since;
        PathEscapeError when a write would pass through a symlink; GitError when git fails
        (the files are then written but not committed: `plan()` told the journal about them).
        """
        self._check_open()
        full_message = with_trailers(message, trailers)
        for key, digest in sorted(self._seen.items()):
            if disk_digest(self.root / key) != digest:
                raise ConcurrentEditError(self.root / key)
        renames = self._ordered_renames()
        for origin, _ in renames:
            self._leaf(origin)
        for key in self._staged:
            self._paths.resolve(key)
        self._applied = True
        for origin, key in renames:
            self._rename(origin, key)
        for key, staged in sorted(self._staged.items()):
            if staged.text is None:
                continue
            data = staged.text.encode("utf-8")
            target = self._paths.resolve(key)  # again: a link planted since staging is refused
            if disk_digest(target) != content_digest(data):
                atomic_write_bytes(target, data)
        for key in sorted(self._deleted - set(self._staged)):
            target = self._paths.resolve(key)  # refuses a path through a planted link
            if os.path.lexists(target):
                target.unlink()
            self._prune_empty_folders(key)
        for origin, _ in renames:
            self._prune_empty_folders(origin)
        self.withheld = ()
        if scanner is not None:
            texts = {
                k: staged.text for k, staged in self._staged.items() if staged.text is not None
            }
            self.withheld = withheld_files(self._git, texts, self._seen_text, scanner)
        paths = (set(self._staged) | self._removed) - {item.path for item in self.withheld}
        return self._git.commit(sorted(paths), full_message)

    def commit_foreign_edits(
        self,
        scanner: Callable[[str], list[str]],
        *,
        message: str = FOREIGN_EDITS_MESSAGE,
        max_bytes: int = MAX_SCANNED_BYTES,
    ) -> ForeignEditsResult:
        """Commit, in a commit of their own, the edits others left uncommitted in the store.

        See `memoryd.worktree._foreign.commit_foreign_edits`; this unit's staged changes are not
        involved (nothing is written to the store).
        """
        return commit_foreign_edits(self._git, scanner, message=message, max_bytes=max_bytes)

    # -- internals -------------------------------------------------------------------------

    def _key(self, relative: str, *, allow_root: bool = False) -> str:
        if allow_root and relative in ("", "."):
            return ""
        key = PurePosixPath(relative).as_posix()
        self._paths.resolve(key)  # raises PathEscapeError for anything not plainly inside
        return key

    def _check_open(self) -> None:
        if self._applied:
            raise StoreError("this unit of work was already applied; start a new one")

    def _remember(self, key: str) -> str:
        """Record (once) the digest of what is on disk at `key`; return it."""
        if key not in self._seen:
            self._seen[key] = disk_digest(self._leaf(key))
        return self._seen[key]

    def _read_disk(self, key: str) -> str | None:
        if key in self._seen_text:
            return self._seen_text[key]
        path = self._paths.resolve(key)
        try:
            data = read_bytes_nofollow(path)
        except (FileNotFoundError, NotADirectoryError):
            self._seen.setdefault(key, ABSENT)
            self._seen_text[key] = None
            return None
        except IsADirectoryError as error:
            raise StoreError(f"{path} is a folder where a file was expected") from error
        self._seen.setdefault(key, content_digest(data))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CorruptFileError(path, f"not UTF-8 text ({error.reason})") from error
        self._seen_text[key] = text
        return text

    def _staged_below(self, key: str) -> bool:
        prefix = key + "/" if key else ""
        return any(staged.startswith(prefix) for staged in self._staged)

    def _is_dir(self, key: str) -> bool:
        if self._staged_below(key):
            return True
        try:  # lstat first: a symlink to a folder is a leaf, never a folder to walk into
            is_folder = stat.S_ISDIR(os.lstat(self.root / key).st_mode)
        except FileNotFoundError:
            return False
        return is_folder and self.exists(key)

    def _leaf(self, key: str) -> Path:
        """The absolute path of `key`, its folders confined; the last component may be a link."""
        parent, _, name = key.rpartition("/")
        return (self._paths.resolve(parent) if parent else self.root) / name

    def _files_below(self, key: str) -> list[str]:
        files = []
        for name in self.list_dir(key):
            child = f"{key}/{name}"
            if self._is_dir(child) and child not in self._staged:
                files.extend(self._files_below(child))
            else:
                files.append(child)
        return files

    def _ordered_renames(self) -> list[tuple[str, str]]:
        """The file renames to perform, in an order where none overwrites a file still to move.

        Raise StoreError (before anything is written) when a rename would overwrite a file
        that is not itself moving away, or when the moves form a cycle.
        """
        pending = {k: s.origin for k, s in self._staged.items() if s.origin not in (None, k)}
        occupied = {k for k in pending if os.path.lexists(self.root / k)}
        ordered: list[tuple[str, str]] = []
        while pending:
            ready = [k for k in sorted(pending) if k not in occupied]
            if not ready:
                raise StoreError(f"cannot apply moves onto existing files: {sorted(occupied)}")
            for key in ready:
                origin = pending.pop(key)
                assert origin is not None  # noqa: S101 - filtered above
                ordered.append((origin, key))
                occupied.discard(origin)
        return ordered

    def _rename(self, origin: str, key: str) -> None:
        source = self._leaf(origin)
        target = self._paths.resolve(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        fsync_directory(target.parent)
        fsync_directory(source.parent)

    def _prune_empty_folders(self, origin: str) -> None:
        folder = (self.root / origin).parent
        while folder != self.root:
            try:
                folder.rmdir()
            except OSError:  # not empty (or already gone): stop climbing
                return
            folder = folder.parent


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name
