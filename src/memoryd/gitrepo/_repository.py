"""The git adapter: `GitStore`, the one way into the store's repository.

It runs git through `memoryd.gitrepo._process` (one command: environment, forced settings,
timeout, error text) and `memoryd.gitrepo._session` (one operation's repository); no other
module runs git. The staging logic of `status`, `commit` and `restore` is in
`memoryd.gitrepo._changes`.

The store is a git work tree, or a folder inside a larger repository. Everything here is scoped
to the store folder: memoryd stages and commits only paths inside it, and a commit never carries
changes staged elsewhere in the repository. When nothing but the paths memoryd names is staged
(the usual case), the commit is the index's tree, made with git's plumbing
(`_session.Session.commit_index`: `write-tree`, `commit-tree`, `update-ref`); when something
else is staged, `git commit --only` builds the commit from HEAD plus the named paths, leaving
the rest of the index as it was.

Invariants:
- git is run as a command, one process per command (`_process.run_git`), never as a
  long-lived helper; the repository is found afresh for each operation
  (`memoryd.gitrepo._support.find_repository`, without running git), and each command runs in
  the work tree with the process's environment, English messages (`LC_ALL=C`, which the error
  mapping reads) and the variables of `_process.git_environment`;
- author and committer are always the configured identity, and commit dates come from the
  injected clock (or git's own when none is given): every `GIT_AUTHOR_*` / `GIT_COMMITTER_*`
  variable is set explicitly, so nothing inherited from the process environment overrides them;
- the repository location is passed explicitly (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`), so
  inherited variables cannot point git at another repository; git never prompts; hooks and
  commit signing are switched off through `GIT_CONFIG_*` (a daemon has no one to answer them);
- git runs only in a repository memoryd's user owns (`memoryd.gitrepo._ownership`), with every
  filter, diff and merge driver the configuration names switched off;
- a commit with nothing in it is never made (`commit` returns None);
- a store folder inside a larger repository that ignores it is refused (IgnoredStoreError) by
  `init` and `commit`: memoryd force-adds the files it names, so that files inside the store
  matching some pattern (`*.json`) are still committed, but it never forces the store folder
  itself into a repository that keeps it out of history. A store that is its own work tree
  is never ignored, whatever an outer repository says.

A stale `index.lock` left by a crashed git is handled before every index write; see
`memoryd.gitrepo._lock` for how memoryd decides that a lock is stale.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import structlog

from memoryd.errors import GitBusyError, GitError
from memoryd.gitrepo._changes import commit_paths, read_status, restore_paths
from memoryd.gitrepo._lock import LockPolicy
from memoryd.gitrepo._ownership import check_owned, config_files, driver_overrides
from memoryd.gitrepo._process import error_detail, git_environment, run_git
from memoryd.gitrepo._session import Session
from memoryd.gitrepo._support import (
    GitIdentity,
    IgnoreRule,
    StoreStatus,
    checked_relative,
    find_repository,
    find_work_tree,
    nul_file,
)

log = structlog.get_logger("memoryd.store.git")  # the name its events always had

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
        check_owned((self.store_root,))
        self.store_root.mkdir(parents=True, exist_ok=True)
        git_dir = self.store_root / ".git"
        env = self._environment(git_dir, self.store_root)
        status, _out, stderr = run_git(
            ["init", "--quiet", f"--initial-branch={initial_branch}"],
            cwd=self.store_root,
            env=env,
            timeout=self._command_timeout,
        )
        if status != 0:
            raise GitError(f"git init in {self.store_root} failed: {error_detail(stderr, status)}")
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
            return read_status(session)

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
            made = commit_paths(session, relative, message)
        if made is None:
            return None
        sha, changed = made
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
            restore_paths(session, relative, self.store_root)
        log.info("store.restored", paths=len(relative))
        return relative

    # -- remotes (git.push) -------------------------------------------------------------------
    # Primitives only; the policy (when to pull, what a conflict means) is memoryd.sync._remote.

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
        progress (a person's: memoryd's own are settled by `memoryd.sync._remote.recover`)."""
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
        For `memoryd.gitrepo._tree`, which builds trees and commits without touching the index."""
        with self._open() as session, nul_file([]) as empty:
            handle = empty
            if stdin is not None:
                handle.write(stdin)
                handle.flush()
                handle.seek(0)
            status, output, stderr = session.execute(args, env=env, stdin=handle)
        if status != 0 and check:
            detail = error_detail(stderr, status)
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
    def _open(self, start: Path | None = None) -> Iterator[Session]:
        # `start`: where to look for the repository when the store folder may not exist yet.
        found = find_repository(start or self.store_root)
        if found is None:
            raise GitError(f"{self.store_root} is not inside a git work tree")
        work_tree, git_dir = found
        if work_tree is None:
            raise GitError(f"{self.store_root} is inside a bare repository")
        work_tree, git_dir = work_tree.resolve(), git_dir.resolve()
        check_owned((work_tree, git_dir, self.store_root))  # before any git command
        # Computed once per operation, as the commit dates are (one clock reading).
        yield Session(
            self.store_root,
            work_tree,
            git_dir,
            environment=self._environment(git_dir, work_tree),
            command_timeout=self._command_timeout,
            lock_policy=self.lock_policy,
        )

    def _environment(self, git_dir: Path, work_tree: Path) -> dict[str, str]:
        # Without a clock git stamps the time itself; an empty value still masks inherited ones.
        stamp = "" if self._clock is None else f"@{int(self._clock().timestamp())} +0000"
        drivers = driver_overrides(config_files(git_dir, os.environ))
        return git_environment(self.identity, stamp, git_dir, work_tree, drivers)
