"""Sharing the store through a git remote (config `git.push`): pull before writing, push after.

Policy, on top of the primitives of `memoryd.store.git`:

- **pull** = fetch the branch, then rebase the local commits onto it, so memory pushed from
  another machine is kept and ours lands on top. Skipped (logged, tried again next job) when a
  tracked file has uncommitted changes: memoryd never stashes, resets or discards anyone's
  work, including its own half-done writes that the next heartbeat must finish. A conflict aborts
  the rebase, which leaves the branch exactly as it was; the local commits stay local.
- **push** = push HEAD to the same branch when the remote lacks it, never forced. A refused
  push (the remote moved on) or a network failure is logged; the next job pulls, rebases and
  pushes again.

Neither ever raises for a remote problem: a store that cannot reach its remote keeps working
locally. Every git command runs with the adapter's timeout and without prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memoryd.errors import GitError
from memoryd.logs import get_logger
from memoryd.store.git import GitStore

log = get_logger(__name__)

PullOutcome = Literal["up-to-date", "rebased", "no-remote-branch", "skipped", "conflict", "failed"]
PushOutcome = Literal["pushed", "up-to-date", "skipped", "rejected", "failed"]


@dataclass(frozen=True)
class PullResult:
    outcome: PullOutcome
    detail: str = ""


@dataclass(frozen=True)
class PushResult:
    outcome: PushOutcome
    detail: str = ""


def pull(git: GitStore, remote: str) -> PullResult:
    """Fetch and rebase onto `remote`'s copy of the current branch; see the module docstring."""
    try:
        result = _pull(git, remote)
    except GitError as error:  # e.g. the store is not a repository yet
        result = PullResult("failed", str(error))
    if result.outcome in ("conflict", "failed"):
        log.error("git.pull_failed", remote=remote, outcome=result.outcome, detail=result.detail)
    elif result.outcome == "skipped":
        log.warning("git.pull_skipped", remote=remote, detail=result.detail)
    elif result.outcome != "up-to-date":
        log.info("git.pulled", remote=remote, outcome=result.outcome, detail=result.detail)
    return result


def _pull(git: GitStore, remote: str) -> PullResult:
    branch = git.branch()
    if branch is None:
        return PullResult("skipped", "HEAD is detached")
    try:
        fetched = git.fetch(remote, branch)
    except GitError as error:
        return PullResult("failed", str(error))
    if fetched is None:
        return PullResult("no-remote-branch", branch)
    if git.contains(fetched):
        return PullResult("up-to-date")
    if git.tracked_changes():
        return PullResult("skipped", "uncommitted changes to tracked files; pulling after a commit")
    return _rebase(git, fetched, f"{remote}/{branch}")


def _rebase(git: GitStore, upstream: str, name: str) -> PullResult:
    try:
        rebased = git.rebase_onto(upstream)
    except GitError as error:
        return PullResult("failed", str(error))
    if not rebased:
        return PullResult("conflict", f"local commits conflict with {name}; kept local, not pushed")
    return PullResult("rebased", upstream)


def push(git: GitStore, remote: str) -> PushResult:
    """Push the current branch to `remote` unless the remote already has HEAD."""
    try:
        result = _push(git, remote)
    except GitError as error:
        result = PushResult("failed", str(error))
    return _push_logged(result, remote)


def _push(git: GitStore, remote: str) -> PushResult:
    branch = git.branch()
    head = git.head()
    if branch is None or head is None:
        return PushResult("skipped", "no branch or no commit to push")
    fetched = git.fetch(remote, branch)
    if fetched is not None and git.contains(head, fetched):
        return PushResult("up-to-date")
    try:
        git.push(remote, branch)
    except GitError as error:
        text = str(error)
        rejected = "rejected" in text or "non-fast-forward" in text or "fetch first" in text
        return PushResult("rejected" if rejected else "failed", text)
    return PushResult("pushed", head)


def _push_logged(result: PushResult, remote: str) -> PushResult:
    if result.outcome in ("rejected", "failed"):
        log.error("git.push_failed", remote=remote, outcome=result.outcome, detail=result.detail)
    elif result.outcome == "skipped":
        log.warning("git.push_skipped", remote=remote, detail=result.detail)
    elif result.outcome == "pushed":
        log.info("git.pushed", remote=remote, commit=result.detail)
    return result
