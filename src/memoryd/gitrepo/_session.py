"""One repository found, for the length of one `GitStore` operation
(`memoryd.gitrepo._repository`): the commands an operation runs, with its environment, and
what they tell about the repository.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from memoryd.errors import GitBusyError, GitError, GitStateError, IgnoredStoreError
from memoryd.gitrepo._lock import LockPolicy, clear_index_lock
from memoryd.gitrepo._process import error_detail, run_git
from memoryd.gitrepo._support import (
    SYNC_MARKER,
    IgnoreRule,
    clean_message,
    nul_file,
    parse_ignore_rule,
    under,
)

_OPERATION_HEADS = (
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)


class Session:
    """One repository found, for the length of one GitStore operation."""

    def __init__(
        self,
        store_root: Path,
        work_tree: Path,
        git_dir: Path,
        *,
        environment: dict[str, str],
        command_timeout: float | None,
        lock_policy: LockPolicy,
    ) -> None:
        # Handed the owner's settings, not the owner: the adapter builds sessions, so a
        # session that knew its adapter would make the two modules import each other.
        self.store_root = store_root
        self.work_tree = work_tree
        self.git_dir = git_dir
        self.environment = environment
        self.command_timeout = command_timeout
        self.lock_policy = lock_policy
        try:
            prefix = store_root.relative_to(work_tree).as_posix()
        except ValueError as error:
            raise GitError(f"{store_root} is not inside {work_tree}") from error
        self.prefix = "" if prefix == "." else prefix

    def execute(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: BinaryIO | None = None,
    ) -> tuple[int, bytes, str]:
        """Run `git <args>` in the work tree: (exit status, raw output, error text)."""
        return run_git(
            args,
            cwd=self.work_tree,
            env={**self.environment, **(env or {})},
            stdin=stdin,
            timeout=self.command_timeout,
        )

    def run(self, *args: str, optional_locks: bool = True, stdin: BinaryIO | None = None) -> str:
        extra = {} if optional_locks else {"GIT_OPTIONAL_LOCKS": "0"}
        status, output, stderr = self.execute(args, env=extra, stdin=stdin)
        if status != 0:
            detail = error_detail(stderr, status)
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

    def stage(self, pathspecs: list[str], *, files_only: bool) -> None:
        """Stage the repo-relative `pathspecs` as they are on disk, as `git add --all --force`
        does: new and changed files added, files gone from disk removed, ignore rules not
        consulted.

        With `files_only` (each one a regular file or a link on disk, or a tracked file gone
        from it), `git update-index` stages them: it looks each path up in the index, where
        `add` matches every entry against every pathspec (on a store of 15,000 files about
        10 ms a commit). Otherwise, or when `update-index` refuses (a file where a tracked
        folder was), `git add` does; a refused `update-index` has written nothing."""
        if files_only:
            with nul_file(pathspecs) as handle:
                status, _out, _err = self.execute(
                    ["update-index", "--add", "--remove", "-z", "--stdin"], stdin=handle
                )
            if status == 0:
                return
        self.run_with_pathspecs(["add", "--all", "--force"], pathspecs)

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

    def commit_index(self, message: str, parent: str) -> str:
        """Commit the index as it is on top of `parent`, HEAD as the caller read it, and move the
        branch to the new commit; return its sha.

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

    def staged_everywhere(self, head: str) -> set[str]:
        """Every repo-relative path whose staged content differs from commit `head` (HEAD as the
        caller read it), in the whole repository."""
        output = self.run("diff", "--cached", "--name-only", "-z", "--no-renames", head)
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
            raise IgnoredStoreError(self.store_root, self.work_tree, rule.pattern, rule.source)

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
            self.git_dir / "index.lock", (self.work_tree, self.git_dir), self.lock_policy
        )
