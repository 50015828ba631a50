"""The git adapter: the only module that runs git.

The store is a git work tree, or a folder inside a larger repository. Everything here is scoped
to the store folder: memoryd stages and commits only paths inside it, and a commit never carries
changes staged elsewhere in the repository (`git commit --only` builds the commit from HEAD plus
the named paths, leaving the rest of the index as it was).

Invariants:
- git is run as a command, one process per command (`_execute`), never as a long-lived helper;
  the repository is found afresh for each operation (`memoryd.store._gitsupport.find_repository`,
  without running git), and each command runs in the work tree with the process's environment,
  English messages (`LC_ALL=C`, which the error mapping reads) and the variables below;
- author and committer are always the configured identity, and commit dates come from the
  injected clock (or git's own when none is given): every `GIT_AUTHOR_*` / `GIT_COMMITTER_*`
  variable is set explicitly, so nothing inherited from the process environment overrides them;
- the repository location is passed explicitly (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`), so
  inherited variables cannot point git at another repository; git never prompts; hooks and
  commit signing are switched off through `GIT_CONFIG_*` (a daemon has no one to answer them);
- a commit with nothing in it is never made (`commit` returns None);
- a store folder inside a larger repository that ignores it is refused (IgnoredStoreError) by
  `init` and `commit`: memoryd force-adds the files it names, so that files inside the store
  matching some pattern (`*.json`) are still committed, but it never forces the store folder
  itself into a repository that keeps it out of history. A store that is its own work tree
  is never ignored, whatever an outer repository says.

A stale `index.lock` left by a crashed git is handled before every index write; see
`memoryd.store._gitlock` for how memoryd decides that a lock is stale.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

import structlog

from memoryd.errors import GitBusyError, GitError, GitStateError, IgnoredStoreError
from memoryd.store._gitlock import LockPolicy, clear_index_lock
from memoryd.store._gitsupport import (
    GitIdentity,
    IgnoreRule,
    StoreStatus,
    checked_relative,
    clean_message,
    find_repository,
    nul_file,
    parse_ignore_rule,
    remove_empty_parents,
    under,
)

log = structlog.get_logger(__name__)

__all__ = [
    "DEFAULT_BRANCH",
    "GitIdentity",
    "GitStore",
    "IgnoreRule",
    "StoreStatus",
    "find_work_tree",
]

DEFAULT_BRANCH = "main"
_OBJECT_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a full SHA-1 or SHA-256 object name
# Present in the git directory while memoryd moves its branch and work tree to another commit
# (`memoryd.store.gittree`); no commit is made until the move is finished.
SYNC_MARKER = "memoryd-sync.json"
# Settings forced on every git command memoryd runs, through GIT_CONFIG_COUNT/KEY/VALUE (git >=
# 2.31): these take precedence over every config file (system, global, the repository's own), so
# no setting there changes what memoryd relies on. Documented in docs/operators-guide.md §9.
FORCED_CONFIG: tuple[tuple[str, str], ...] = (
    # No hook runs for memoryd's commands (a daemon has no one to answer them), no signing.
    ("core.hooksPath", os.devnull),
    ("commit.gpgSign", "false"),
    ("core.quotePath", "false"),
    # The bytes memoryd writes are the bytes committed: no line-ending conversion, and no refusal
    # of a commit because a conversion would not round-trip (`core.safecrlf`).
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.eol", "lf"),
    # No command from the configuration is ever executed by memoryd's git: no file-system
    # monitor, no pager, no editor.
    ("core.fsmonitor", "false"),
    # The untracked files of a status are found from the index's cache of folders' untracked
    # entries, kept up to date by memoryd's status (`GitStore.status`): a store's folders are
    # not all read again at every heartbeat. An optional index extension other git tools skip.
    ("core.untrackedCache", "true"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    # Nothing is stashed behind memoryd's back, and submodules are left alone.
    ("rebase.autoStash", "false"),
    ("merge.autoStash", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("advice.detachedHead", "false"),
)


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


class GitStore:
    """Git operations on one store folder. Cheap to build; holds no open repository."""

    def __init__(
        self,
        store_root: Path,
        identity: GitIdentity,
        clock: Callable[[], datetime] | None,
        *,
        stale_lock_after: timedelta = timedelta(minutes=10),
        lock_timeout_seconds: float = 30.0,
        lock_poll_seconds: float = 0.25,
        command_timeout_seconds: float | None = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        proc_root: Path = Path("/proc"),
    ) -> None:
        self.store_root = store_root.resolve()
        self.identity = identity
        self._clock = clock
        self._command_timeout = command_timeout_seconds
        self.lock_policy = LockPolicy(
            now=self._now,
            sleep=sleep,
            stale_after=stale_lock_after,
            timeout_seconds=lock_timeout_seconds,
            poll_seconds=lock_poll_seconds,
            proc_root=proc_root,
        )

    def now(self) -> datetime | None:
        """The injected clock's time, or None for a store built without a clock."""
        return self._clock() if self._clock is not None else None

    def _now(self) -> datetime:
        # Lock age needs a time; a store built without a clock treats every lock as young.
        return self._clock() if self._clock is not None else datetime.min.replace(tzinfo=UTC)

    # -- repository discovery -------------------------------------------------------------

    def work_tree_root(self) -> Path | None:
        """The root of the work tree the store lives in, or None when it is in none."""
        return find_work_tree(self.store_root)

    def init(self, initial_branch: str = DEFAULT_BRANCH) -> bool:
        """Make the store a git work tree unless it already lies inside one.

        Return True when a repository was created. The initial branch is named explicitly so
        the result does not depend on the machine's `init.defaultBranch`. Raise
        IgnoredStoreError, creating nothing, when the enclosing repository ignores the store
        folder (which need not exist yet).
        """
        if self.work_tree_root() is not None:
            self.check_not_ignored()
            return False
        self.store_root.mkdir(parents=True, exist_ok=True)
        git_dir = self.store_root / ".git"
        env = self._environment(git_dir, self.store_root)
        status, _out, stderr = _execute(
            ["init", "--quiet", f"--initial-branch={initial_branch}"],
            cwd=self.store_root,
            env=env,
            timeout=self._command_timeout,
        )
        if status != 0:
            raise GitError(f"git init in {self.store_root} failed: {_detail(stderr, status)}")
        log.info("store.git_initialized", path=str(self.store_root), branch=initial_branch)
        return True

    def ignore_rule(self) -> IgnoreRule | None:
        """The rule of the enclosing repository that ignores the store folder, or None.

        Always None for a store that is the root of its own work tree. Raise GitError when the
        store is in no work tree or git fails.
        """
        with self._open(self.work_tree_root()) as session:
            return session.ignore_rule()

    def check_not_ignored(self) -> None:
        """Raise IgnoredStoreError when the enclosing repository ignores the store folder (which
        need not exist yet). Raise GitError when the store is in no work tree or git fails."""
        with self._open(self.work_tree_root()) as session:
            session.check_not_ignored()

    # -- reading ----------------------------------------------------------------------------

    def head(self) -> str | None:
        """The sha of the current commit, or None on an unborn branch."""
        with self._open() as session:
            return session.head()

    def changed_since(self, commit: str) -> list[str] | None:
        """Store-relative paths that differ between `commit` and HEAD (committed changes only),
        or None when `commit` is not a commit of this repository."""
        if not _OBJECT_NAME.fullmatch(commit):
            return None  # never an option or a revision expression
        with self._open() as session:
            try:
                output = session.run(
                    "diff", "--name-only", "-z", "--no-renames", f"{commit}^{{commit}}", "HEAD",
                    "--", *session.store_pathspec(),
                )  # fmt: skip
            except GitError:
                return None
            found = (session.to_store_relative(entry) for entry in output.split("\0") if entry)
            return sorted(path for path in found if path is not None)

    def blob_at_head(self, path: str) -> str | None:
        """The object name of the file HEAD has at the store-relative `path`, or None (no
        such file, an unborn branch)."""
        relative = checked_relative(path)
        with self._open() as session:
            status, output, _err = session.execute(
                ["rev-parse", "--verify", "--quiet", f"HEAD:{session.to_repo_relative(relative)}"]
            )
        name = output.decode("ascii", "replace").strip()
        return name if status == 0 and _OBJECT_NAME.fullmatch(name) else None

    def store_identity(self) -> str | None:
        """What tells this store from any other: the first commit of its history and the store
        folder's path in the work tree (clones of one store share it; another repository, or
        another folder of the same one, does not). None on an unborn branch."""
        with self._open() as session:
            if session.head() is None:
                return None
            roots = session.run("rev-list", "--max-parents=0", "HEAD", optional_locks=False)
            first = sorted(line for line in roots.split() if line)[0]
            return f"{first}:{session.prefix}"

    def is_ancestor(self, commit: str) -> bool:
        """Whether `commit` is HEAD or in its history (False for an unknown commit)."""
        with self._open() as session:
            if session.head() is None:
                return False
            status, _out, _err = session.execute(["merge-base", "--is-ancestor", commit, "HEAD"])
            return status == 0

    def status(self) -> StoreStatus:
        """Uncommitted changes under the store folder (ignored files are not listed).

        Asked first with untracked folders shown as folders: git answers that mode from the
        index's untracked cache (`core.untrackedCache`, FORCED_CONFIG; git 2.39 keeps the
        cache for this mode only), reading again only the folders whose modification time
        changed since the last status, where listing every untracked file reads every folder
        of the store. Only when a folder of untracked files is reported (someone added a
        folder; rare) is git asked again with every file listed: the answer is the same as
        listing every file at once. Like a person's `git status`, this one writes the index
        back (the cache and the refreshed file status of changed entries) when it can take
        the index lock at once, so that the next status starts from them; it never waits
        for the lock."""
        with self._open() as session:
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
            return StoreStatus(
                tuple(sorted(modified)), tuple(sorted(untracked)), tuple(sorted(deleted))
            )

    # -- writing ----------------------------------------------------------------------------

    def commit(self, paths: Iterable[str], message: str) -> str | None:
        """Commit exactly the given store-relative paths (files or folders) as they are on disk.

        Deleted paths are committed as deletions, so a folder moved on disk and committed under
        both its old and new path is recorded as a rename. Changes staged outside these paths,
        inside or outside the store, are left staged and uncommitted. Return the new commit's
        sha, or None when the paths hold no change against HEAD. Raise IgnoredStoreError when
        the enclosing repository ignores the store folder, GitError on failure.
        """
        relative = sorted({checked_relative(p) for p in paths})
        if not relative:
            return None
        with self._open() as session:
            session.check_not_ignored()
            session.check_writable()
            session.clear_index_lock()
            pathspecs = [session.to_repo_relative(p) for p in relative]
            # The index is listed only for paths gone from disk (a deletion or a move): on most
            # commits every path exists, and listing a big store's index costs more than them.
            gone = [spec for spec in pathspecs if not os.path.lexists(session.work_tree / spec)]
            known = session.tracked(gone) if gone else set()
            stageable = [
                spec
                for spec in pathspecs
                if spec not in gone or any(k == spec or k.startswith(spec + "/") for k in known)
            ]
            if not stageable:
                return None
            # --force: a path memoryd names is store content even if a .gitignore matches it
            # (`*.json`); the store folder itself was checked above not to be ignored.
            session.run_with_pathspecs(["add", "--all", "--force"], stageable)
            staged = session.staged_everywhere()
            changed = (
                session.staged_changes(stageable)
                if staged is None
                else sorted(under(staged, stageable))
            )
            if not changed:
                return None
            if staged is not None and staged == set(changed):
                # Nothing else is staged: the index is HEAD plus these paths, and its tree is
                # the commit's (see `commit_index`), without `--only`'s temporary index.
                sha: str | None = session.commit_index(message)
            else:
                session.run_with_pathspecs(
                    ["commit", "--quiet", "--no-verify", "--only", "-m", message], changed
                )
                sha = session.head()
        log.info("store.committed", commit=sha, paths=len(changed))
        return sha

    def find_commit(self, trailer: str, value: str, *, limit: int = 50) -> str | None:
        """The sha of the most recent of the last `limit` commits whose message has the trailer
        line `<trailer>: <value>`, or None (also on an unborn branch)."""
        wanted = f"{trailer}: {value}"
        with self._open() as session:
            if session.head() is None:
                return None
            output = session.run(
                "log", f"--max-count={limit}", "--format=%H%x00%B%x1e", optional_locks=False
            )
        for record in output.split("\x1e"):
            sha, _, body = record.strip().partition("\0")
            if sha and wanted in body.splitlines():
                return sha
        return None

    def restore(self, paths: Iterable[str]) -> list[str]:
        """Put store-relative files back as HEAD has them: a tracked file gets HEAD's content
        (undeleted if need be), a file HEAD does not have is removed. Return what was restored.
        Used to undo memoryd's own half-done writes; never call it on others' edits."""
        relative = sorted({checked_relative(p) for p in paths})
        if not relative:
            return []
        with self._open() as session:
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
                        remove_empty_parents(target.parent, self.store_root)
        log.info("store.restored", paths=len(relative))
        return relative

    # -- remotes (git.push) -------------------------------------------------------------------
    # Primitives only; the policy (when to pull, what a conflict means) is memoryd.store.sync.

    def branch(self) -> str | None:
        """The checked-out branch's short name, or None on a detached HEAD."""
        with self._open() as session:
            try:
                name = session.run("symbolic-ref", "--quiet", "--short", "HEAD").strip()
            except GitError:
                return None
        return name or None

    def fetch(self, remote: str, branch: str) -> str | None:
        """Fetch `branch` from `remote` into `refs/remotes/<remote>/<branch>`; return the fetched
        commit, or None when the remote has no such branch yet. Raise GitError on failure."""
        tracking = f"refs/remotes/{remote}/{branch}"
        with self._open() as session:
            try:
                session.run(
                    "fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:{tracking}"
                )
            except GitError as error:
                if "couldn't find remote ref" in str(error):
                    return None
                raise
            return session.run("rev-parse", "--verify", "--quiet", tracking).strip() or None

    def contains(self, ancestor: str, descendant: str = "HEAD") -> bool:
        """Whether commit `ancestor` is `descendant` or one of its ancestors."""
        with self._open() as session:
            try:
                session.run("merge-base", "--is-ancestor", ancestor, descendant)
            except GitError:
                return False
        return True

    def check_writable(self) -> None:
        """Raise GitStateError when memoryd must not commit here: a detached HEAD (its commits
        would be lost by the next `git checkout`), or a rebase, merge, cherry-pick or revert in
        progress (a person's: memoryd's own are settled by `memoryd.store.sync.recover`)."""
        with self._open() as session:
            session.check_writable()

    def operation_in_progress(self) -> str | None:
        """The name of the rebase, merge, cherry-pick or revert in progress, or None."""
        with self._open() as session:
            return session.operation_in_progress()

    def locations(self) -> tuple[Path, Path, str]:
        """The work tree, the git directory, and the store folder's path in the work tree
        ("" when the store is the work tree's root)."""
        with self._open() as session:
            return session.work_tree, session.git_dir, session.prefix

    def plumbing(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> tuple[int, bytes]:
        """Run one git command in the repository with memoryd's environment (FORCED_CONFIG,
        identity, clock) and return its exit status and raw standard output. Raise GitError on
        a non-zero status when `check`; GitBusyError when another git holds the index lock.
        For `memoryd.store.gittree`, which builds trees and commits without touching the index."""
        with self._open() as session, nul_file([]) as empty:
            handle = empty
            if stdin is not None:
                handle.write(stdin)
                handle.flush()
                handle.seek(0)
            status, output, stderr = session.execute(args, env=env, stdin=handle)
        if status != 0 and check:
            detail = _detail(stderr, status)
            if "index.lock" in detail and "exists" in detail:
                raise GitBusyError(f"git {args[0]} failed: {detail}")
            raise GitError(f"git {args[0]} failed: {detail}")
        return status, output

    def push(self, remote: str, branch: str) -> None:
        """Push HEAD to `branch` on `remote`, never forced. Raise GitError when the remote
        refuses (it has commits we lack) or the push fails."""
        with self._open() as session:
            session.run("push", "--quiet", "--porcelain", remote, f"HEAD:refs/heads/{branch}")

    # -- internals --------------------------------------------------------------------------

    @contextmanager
    def _open(self, start: Path | None = None) -> Iterator[_Session]:
        # `start`: where to look for the repository when the store folder may not exist yet.
        found = find_repository(start or self.store_root)
        if found is None:
            raise GitError(f"{self.store_root} is not inside a git work tree")
        work_tree, git_dir = found
        if work_tree is None:
            raise GitError(f"{self.store_root} is inside a bare repository")
        yield _Session(self, work_tree.resolve(), git_dir.resolve())

    def _environment(self, git_dir: Path, work_tree: Path) -> dict[str, str]:
        # Without a clock git stamps the time itself; an empty value still masks inherited ones.
        stamp = "" if self._clock is None else f"@{int(self._clock().timestamp())} +0000"
        environment = {
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_INDEX_FILE": str(git_dir / "index"),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_AUTHOR_NAME": self.identity.name,
            "GIT_AUTHOR_EMAIL": self.identity.email,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": self.identity.name,
            "GIT_COMMITTER_EMAIL": self.identity.email,
            "GIT_COMMITTER_DATE": stamp,
            "GIT_CONFIG_COUNT": str(len(FORCED_CONFIG)),
        }
        for index, (key, value) in enumerate(FORCED_CONFIG):
            environment[f"GIT_CONFIG_KEY_{index}"] = key
            environment[f"GIT_CONFIG_VALUE_{index}"] = value
        return environment


class _Session:
    """One repository found, for the length of one GitStore operation."""

    def __init__(self, owner: GitStore, work_tree: Path, git_dir: Path) -> None:
        self.owner = owner
        self.work_tree = work_tree
        self.git_dir = git_dir
        # Computed once per operation, as the commit dates are (one clock reading).
        self.environment = owner._environment(git_dir, work_tree)
        try:
            prefix = owner.store_root.relative_to(work_tree).as_posix()
        except ValueError as error:
            raise GitError(f"{owner.store_root} is not inside {work_tree}") from error
        self.prefix = "" if prefix == "." else prefix

    def execute(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: BinaryIO | None = None,
    ) -> tuple[int, bytes, str]:
        """Run `git <args>` in the work tree: (exit status, raw output, error text)."""
        return _execute(
            args,
            cwd=self.work_tree,
            env={**self.environment, **(env or {})},
            stdin=stdin,
            timeout=self.owner._command_timeout,
        )

    def run(self, *args: str, optional_locks: bool = True, stdin: BinaryIO | None = None) -> str:
        extra = {} if optional_locks else {"GIT_OPTIONAL_LOCKS": "0"}
        status, output, stderr = self.execute(args, env=extra, stdin=stdin)
        if status != 0:
            detail = _detail(stderr, status)
            if "index.lock" in detail and "exists" in detail:
                # Another git took the lock between our check and this command: transient.
                raise GitBusyError(f"git {args[0]} failed: {detail}")
            raise GitError(f"git {args[0]} failed: {detail}")
        return output.decode("utf-8", "surrogateescape")

    def run_with_pathspecs(
        self, arguments: list[str], pathspecs: list[str], *, optional_locks: bool = True
    ) -> str:
        """Run git with pathspecs fed through stdin: no argument-length limit, and with
        GIT_LITERAL_PATHSPECS no character in a file name is taken as a pattern."""
        with nul_file(pathspecs) as handle:
            return self.run(
                *arguments,
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                optional_locks=optional_locks,
                stdin=handle,
            )

    def head(self) -> str | None:
        try:
            return self.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip() or None
        except GitError:
            return None

    def store_pathspec(self) -> list[str]:
        return [self.prefix] if self.prefix else []

    def to_repo_relative(self, store_relative: str) -> str:
        return f"{self.prefix}/{store_relative}" if self.prefix else store_relative

    def to_store_relative(self, repo_relative: str) -> str | None:
        if not self.prefix:
            return repo_relative
        if repo_relative.startswith(self.prefix + "/"):
            return repo_relative[len(self.prefix) + 1 :]
        return None

    def tracked(self, pathspecs: list[str]) -> set[str]:
        """Index entries at or below the given repo-relative pathspecs."""
        output = self.run("ls-files", "--cached", "-z", "--", *self.store_pathspec())
        return under({entry for entry in output.split("\0") if entry}, pathspecs)

    def commit_index(self, message: str) -> str:
        """Commit the index as it is on top of HEAD (which must exist) and move the branch to
        the new commit; return its sha.

        What `git commit -m` does, in the plumbing commands it is made of: the index's tree
        (`write-tree`, from the index's cached trees: only the folders of the paths just staged
        are hashed again), a commit of it on HEAD (`commit-tree`, the message cleaned as `git
        commit` cleans a `-m` message by default) and the branch moved to it with the same
        reflog entry (`update-ref`, only if HEAD is still the parent: a commit made meanwhile
        by someone else is never lost but fails this one with GitError). `git commit` also
        refreshes the cached file status of every index entry first (an lstat of every tracked
        file) and writes the whole index again: on a store of 15,000 files most of a commit's
        cost, for nothing this commit needs (the paths committed were just staged, which
        refreshed theirs; `status` refreshes the others, see there)."""
        parent = self.run("rev-parse", "--verify", "HEAD^{commit}").strip()
        tree = self.run("write-tree").strip()
        text = clean_message(message)
        commit = self.run("commit-tree", tree, "-p", parent, "-m", text).strip()
        subject = text.split("\n", 1)[0]
        self.run("update-ref", "-m", f"commit: {subject}", "HEAD", commit, parent)
        # What `git commit` runs after each commit: git's automatic housekeeping (loose objects
        # packed once there are many; `gc.auto`, `maintenance.auto`), which decides for itself
        # and costs a look at one object folder when there is nothing to do. Its failure is
        # not the commit's, as for `git commit`.
        self.execute(["maintenance", "run", "--auto", "--quiet"])
        return commit

    def staged_everywhere(self) -> set[str] | None:
        """Every repo-relative path whose staged content differs from HEAD, in the whole
        repository (None on an unborn branch)."""
        if self.head() is None:
            return None
        output = self.run("diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD")
        return {entry for entry in output.split("\0") if entry}

    def staged_changes(self, pathspecs: list[str]) -> list[str]:
        """Files at or below the pathspecs whose staged content differs from HEAD."""
        if self.head() is None:
            return sorted(self.tracked(pathspecs))
        output = self.run(
            "diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD",
            "--", *self.store_pathspec(),
        )  # fmt: skip
        return sorted(under({entry for entry in output.split("\0") if entry}, pathspecs))

    def ignore_rule(self) -> IgnoreRule | None:
        """The rule ignoring the store folder; see `GitStore.ignore_rule`."""
        if not self.prefix:
            return None  # the store is the work tree's root, which nothing can ignore
        # --no-index: files under the folder may be tracked already (force-added by an older
        # memoryd), and a tracked path would otherwise be reported as not ignored. The trailing
        # slash lets a folder-only pattern (`data/`) match a folder that does not exist yet.
        # check-ignore refuses literal pathspecs; it never expands wildcards in the path it is
        # given, and `:(top)` keeps a leading `:` in a folder name from being read as magic.
        with nul_file([f":(top){self.prefix}/"]) as handle:
            status, output, stderr = self.execute(
                ["check-ignore", "--verbose", "--no-index", "--stdin", "-z"],
                env={"GIT_LITERAL_PATHSPECS": "0"},
                stdin=handle,
            )
        if status not in (0, 1):  # 1 is "not ignored"
            raise GitError(f"git check-ignore failed: {stderr.strip() or f'exit {status}'}")
        text = output.decode("utf-8", "surrogateescape")
        return parse_ignore_rule(text, self.work_tree) if status == 0 else None

    def check_not_ignored(self) -> None:
        rule = self.ignore_rule()
        if rule is not None:
            raise IgnoredStoreError(
                self.owner.store_root, self.work_tree, rule.pattern, rule.source
            )

    def rebase_in_progress(self) -> bool:
        return (self.git_dir / "rebase-merge").exists() or (self.git_dir / "rebase-apply").exists()

    def operation_in_progress(self) -> str | None:
        if self.rebase_in_progress():
            return "rebase"
        for name, operation in _OPERATION_HEADS:
            if (self.git_dir / name).exists():
                return operation
        return None

    def check_writable(self) -> None:
        if (self.git_dir / SYNC_MARKER).exists():
            raise GitBusyError(
                f"memoryd's move of the branch to another commit is unfinished in {self.work_tree}"
                "; the next job finishes it before writing"
            )
        operation = self.operation_in_progress()
        if operation is not None:
            raise GitStateError(
                f"a {operation} is in progress in {self.work_tree} (not memoryd's): memoryd "
                f"writes nothing until it is finished or aborted (git {operation} --continue "
                f"or --abort)"
            )
        status, _out, _err = self.execute(["symbolic-ref", "--quiet", "HEAD"])
        if status != 0:
            raise GitStateError(
                f"HEAD is detached in {self.work_tree}: memoryd commits only on a branch (commits "
                "on a detached HEAD are lost by the next checkout); check out the store's branch "
                "(git checkout main), keeping any commit made meanwhile (git branch keep <sha>)"
            )

    def clear_index_lock(self) -> None:
        """Remove a stale index.lock, wait for a live one, or raise GitError."""
        clear_index_lock(
            self.git_dir / "index.lock", (self.work_tree, self.git_dir), self.owner.lock_policy
        )


_OPERATION_HEADS = (
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)


def _execute(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: BinaryIO | None = None,
    timeout: float | None,
) -> tuple[int, bytes, str]:
    """Run `git <args>`: (exit status, raw standard output, standard error as text).

    Git runs with this process's environment (its `HOME` and the user's git configuration, an
    SSH agent for a remote) with `env` over it, and English messages (`LANGUAGE`, `LC_ALL`),
    which the callers' error mapping reads ("index.lock ... exists"). A command still running
    after `timeout` seconds is killed with whatever it started (an `ssh` to a remote), and
    reported with status -9 and a "Timeout" message, as GitPython's `kill_after_timeout` did;
    so is git interrupted by an exception here (a signal handler's). Git stays in memoryd's
    process group: an `ssh` it starts can still ask a person at the terminal for a passphrase.
    Git that cannot be started raises GitError."""
    environment = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **env}
    command = ["git", *args]
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd if os.access(cwd, os.X_OK) else None,
            env=environment,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as error:
        raise GitError(f"git {args[0]} could not be run: {error}") from error
    with process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(process)
            shown = " ".join(command)
            return -9, b"", f'Timeout: the command "{shown}" did not complete in {timeout:g} secs.'
        except BaseException:
            _kill_tree(process)
            raise
    return process.returncode, stdout, stderr.decode("utf-8", "replace")


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """Kill git and the processes it started (found before git dies, while they are still its
    descendants), and reap git."""
    for pid in [process.pid, *_descendants(process.pid)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    process.communicate()


def _descendants(root: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes below `root`, from each process's parent in `/proc/<pid>/stat`."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            # The command name, in parentheses, may hold anything: the parent follows the last
            # ')' and the state.
            fields = (proc / name / "stat").read_text(encoding="utf-8", errors="replace")
            parent = int(fields.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    waiting = [root]
    while waiting:
        for child in children.get(waiting.pop(), []):
            found.append(child)
            waiting.append(child)
    return found


def _detail(stderr: str, status: int) -> str:
    # git's usage dumps are long; the first lines say what went wrong.
    return "; ".join(stderr.strip().splitlines()[:3]) or f"exit {status}"
