"""Sharing the store through a git remote (config `git.push`): pull before writing, push after.

Policy, on top of `memoryd.gitrepo._tree` (trees, commits, safe branch moves) and
`memoryd.sync._merge_tree` / `memoryd.sync._merge` (merging trees and files by meaning):

- **pull** = fetch the branch; when the remote has moved, bring its commits in:
  - this host has nothing unpushed: the branch moves to the remote's commit (a fast-forward);
  - both moved: memoryd never asks git to merge or rebase. It takes the remote's tree and
    re-applies this host's changes since the common ancestor on top of it, file by file by
    meaning (`memoryd.sync._merge`), then records the result as a merge commit of the two
    (trailer `Memoryd-Sync: merge`) and regenerates `life/index.md`. memoryd's files never
    conflict; a person's commit on the remote is kept as it is, and where a person's change
    contradicts this host's, the person's is kept and `git.merge_kept_remote` is logged (this
    host's version stays in history, as the merge's second parent).
  The work tree follows the branch file by file; uncommitted changes elsewhere in the repository
  never block a pull. With `carry_edits` (the heartbeat, once memoryd's own half-done writes are
  finished or undone), an uncommitted change to a store file the remote also changed (a hand edit
  withheld for a secret) is carried over: the file gets the remote's change with the person's
  edit on top, still uncommitted (`git.local_edit_carried`), when the two merge without a
  contradiction and every line the person wrote is kept; otherwise the pull waits
  (`git.pull_skipped`): memoryd never overwrites, stashes or discards anyone's work.
- **push** = push HEAD to the same branch, never forced. Refused (the remote moved meanwhile):
  pull and push again, a few times.
- **recover** (before any job writes): finish or drop a branch move a killed memoryd left, clear
  a rebase an older memoryd left (keeping the commits made on top of it), then refuse a detached
  HEAD or a person's rebase or merge in progress (GitStateError, exit 78).

Neither pull nor push ever raises for a remote problem: a store that cannot reach its remote
keeps working locally. How the sync fares (`SyncHealth`) is kept beside the repository's own
files, in `<git dir>/memoryd-sync-health.json`: it is this clone's, not the memory's.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Literal

from memoryd import gitrepo
from memoryd.errors import GitError, GitStateError, StoreError
from memoryd.gitrepo import GitStore
from memoryd.logs import get_logger

log = get_logger("memoryd.store.sync")  # the name its events always had

PullOutcome = Literal[
    "up-to-date", "fast-forward", "merged", "no-remote-branch", "skipped", "failed"
]
PushOutcome = Literal["pushed", "up-to-date", "skipped", "rejected", "failed"]
HEALTH_NAME = "memoryd-sync-health.json"
PUSH_ATTEMPTS = 3


@dataclass(frozen=True)
class PullResult:
    outcome: PullOutcome
    detail: str = ""


@dataclass(frozen=True)
class PushResult:
    outcome: PushOutcome
    detail: str = ""


# -- recovering before a job writes ------------------------------------------------------------


def recover(git: GitStore) -> None:
    """Settle what a killed memoryd left in the repository, then check that memoryd may write
    (raise GitStateError for a detached HEAD or a person's operation in progress)."""
    if git.work_tree_root() is None:
        return  # not a repository yet: `init` makes it one
    gitrepo.settle_interrupted_move(git)
    if git.operation_in_progress() == "rebase":
        _clear_own_rebase(git)
    git.check_writable()


def _clear_own_rebase(git: GitStore) -> None:
    """An older memoryd's rebase (every commit in it is memoryd's): abort it and merge, by
    meaning, the commits made on top of it since, so nothing filed meanwhile is lost."""
    _work_tree, git_dir, _prefix = git.locations()
    folder = git_dir / "rebase-merge"
    if not folder.is_dir():
        folder = git_dir / "rebase-apply"
    try:
        head_name = (folder / "head-name").read_text().strip()
        orig_head = (folder / "orig-head").read_text().strip()
        onto = (folder / "onto").read_text().strip()
    except OSError:
        return
    current = git.plumbing("rev-parse", "HEAD")[1].decode().strip()
    ours = _rebase_starter(git_dir) == git.identity.email
    if not (ours and head_name.startswith("refs/heads/")) or not _only_memoryds(
        git, onto, orig_head, current
    ):
        return  # a person's rebase: check_writable refuses to write, with what to do
    branch = head_name.removeprefix("refs/heads/")
    git.plumbing("rebase", "--abort")
    log.warning("git.rebase_cleared", branch=branch, kept=orig_head, detached=current)
    if gitrepo.is_ancestor(git, current, orig_head):
        return
    merged = _merge_tree().merge_commit(
        git, orig_head, current, "the commits made during the rebase"
    )
    blocking = gitrepo.blocking_paths(git, orig_head, merged)
    if blocking:
        raise GitStateError(f"cannot bring back commits made during a rebase: {blocking[:5]}")
    gitrepo.move_branch(git, branch, orig_head, merged)
    log.warning("git.rebase_commits_kept", branch=branch, commit=merged)


def _rebase_starter(git_dir: Path) -> str | None:
    """The email of whoever started the rebase in progress, from HEAD's reflog (memoryd's own
    commands carry its identity), or None when the reflog does not say."""
    try:
        lines = (git_dir / "logs" / "HEAD").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in reversed(lines.splitlines()):
        who, _, message = line.partition("\t")
        if message.startswith("rebase") and "(start)" in message:
            return who.partition("<")[2].partition(">")[0] or None
    return None


def _only_memoryds(git: GitStore, onto: str, *heads: str) -> bool:
    emails: set[str] = set()
    for head in heads:
        output = git.plumbing("log", "--format=%ce", f"{onto}..{head}", check=False)[1]
        emails.update(line for line in output.decode().splitlines() if line)
    return emails <= {git.identity.email}


# -- pull ----------------------------------------------------------------------------------


def pull(git: GitStore, remote: str, *, carry_edits: bool = False) -> PullResult:
    """Fetch and bring in the remote's copy of the branch; see the module docstring.
    `carry_edits`: uncommitted edits to files the remote changed are carried over rather than
    postponing the pull. Only for a caller that has finished or undone memoryd's own half-done
    writes first (`memoryd.jobs.recovery`): a half-done write must stay recognisable as one."""
    try:
        result = _pull(git, remote, carry_edits=carry_edits)
    except GitError as error:  # e.g. the store is not a repository yet
        result = _settled(git, PullResult("failed", str(error)))
    if result.outcome == "failed":
        log.error("git.pull_failed", remote=remote, outcome=result.outcome, detail=result.detail)
    elif result.outcome == "skipped":
        log.warning("git.pull_skipped", remote=remote, detail=result.detail)
    elif result.outcome in ("fast-forward", "merged"):
        log.info("git.pulled", remote=remote, outcome=result.outcome, detail=result.detail)
    if result.outcome in ("up-to-date", "fast-forward", "merged", "no-remote-branch"):
        record_health(git, last_pull=_now(git))
    return result


def _pull(git: GitStore, remote: str, *, carry_edits: bool) -> PullResult:
    branch = git.branch()
    if branch is None:
        return PullResult("skipped", "HEAD is detached")
    fetched = _fetch(git, remote, branch)
    if isinstance(fetched, PullResult):
        return fetched
    head = git.head()
    if head is not None and gitrepo.is_ancestor(git, fetched, head):
        return PullResult("up-to-date")
    target = _target(git, head, fetched, f"{remote}/{branch}")
    if isinstance(target, PullResult):
        return target
    new, outcome = target
    blocking = gitrepo.blocking_paths(git, head, new)
    carried = _merge_tree().carry_local_edits(git, head, new, blocking) if carry_edits else {}
    if len(carried) < len(blocking):
        stuck = [path for path in blocking if path not in carried]
        shown = ", ".join(stuck[:5]) + (" ..." if len(stuck) > 5 else "")
        return PullResult(
            "skipped", f"uncommitted changes to files the remote changed ({shown}); pulling later"
        )
    for path, data in carried.items():
        # Before the move: the file keeps the person's edit, now on top of the remote's change.
        gitrepo.write_work_file(git, path, data)
        log.info("git.local_edit_carried", path=path)
    kept = gitrepo.move_branch(git, branch, head, new)
    if outcome == "merged":
        try:
            _merge_tree().regenerate_index(git)
        except StoreError as error:  # e.g. a broken entity.json: the next heartbeat says so
            log.warning("git.index_not_regenerated", error=str(error))
    detail = new if not kept else f"{new}; left as they are: {', '.join(kept[:5])}"
    return PullResult(outcome, detail)


def _settled(git: GitStore, failed: PullResult) -> PullResult:
    """After a pull failed: a branch move it left unfinished is finished now, or the error stops
    the job (GitError): a half-moved work tree must never be committed as someone's edits."""
    try:
        _work_tree, git_dir, _prefix = git.locations()
    except GitError:
        return failed  # not a repository: there is no move to finish
    if not (git_dir / gitrepo.MARKER_NAME).exists():
        return failed
    if gitrepo.settle_interrupted_move(git) == "finished":
        return PullResult("fast-forward", f"finished after an error ({failed.detail})")
    return failed


def _fetch(git: GitStore, remote: str, branch: str) -> str | PullResult:
    try:
        fetched = git.fetch(remote, branch)
    except GitError as error:
        return PullResult("failed", str(error))
    return fetched if fetched is not None else PullResult("no-remote-branch", branch)


def _target(
    git: GitStore, head: str | None, fetched: str, name: str
) -> tuple[str, PullOutcome] | PullResult:
    """Where the branch moves: the remote's commit, or a merge by meaning of the two."""
    if head is None or gitrepo.is_ancestor(git, head, fetched):
        return fetched, "fast-forward"
    if gitrepo.merge_base(git, head, fetched) is None:
        # Two stores that never shared a commit (`memoryd init` run on both hosts): merging them
        # would mix two memories. The operator chooses (clone the remote's store on this host).
        return PullResult(
            "failed",
            f"{name} shares no history with this store: it is another store; "
            "clone it instead of running `memoryd init` on each host",
        )
    return _merge_tree().merge_commit(git, head, fetched, name), "merged"


# -- push ----------------------------------------------------------------------------------


def push(git: GitStore, remote: str) -> PushResult:
    """Push the current branch to `remote` unless the remote already has HEAD."""
    try:
        result = _push(git, remote)
    except GitError as error:
        result = PushResult("failed", str(error))
    return _push_logged(git, result, remote)


def push_with_retries(git: GitStore, remote: str, attempts: int = PUSH_ATTEMPTS) -> PushResult:
    """Push; when the remote moved meanwhile (refused), pull and push again, a few times."""
    result = push(git, remote)
    for _ in range(attempts - 1):
        if result.outcome != "rejected":
            break
        if pull(git, remote).outcome not in ("fast-forward", "merged", "up-to-date"):
            break
        result = push(git, remote)
    return result


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


def _push_logged(git: GitStore, result: PushResult, remote: str) -> PushResult:
    if result.outcome in ("rejected", "failed"):
        log.warning("git.push_failed", remote=remote, outcome=result.outcome, detail=result.detail)
    elif result.outcome == "skipped":
        log.warning("git.push_skipped", remote=remote, detail=result.detail)
    elif result.outcome == "pushed":
        log.info("git.pushed", remote=remote, commit=result.detail)
    return result


# -- health ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyncHealth:
    """How this clone's sync fares: when a pull and a push last succeeded, and how many jobs in a
    row failed to push (with the last error)."""

    last_pull: str | None = None
    last_push: str | None = None
    push_failures: int = 0
    last_push_error: str | None = None


def read_health(git: GitStore) -> SyncHealth:
    try:
        path = _health_path(git)
        document = json.loads(path.read_text(encoding="utf-8"))
        return SyncHealth(**{k: document[k] for k in asdict(SyncHealth()) if k in document})
    except (OSError, ValueError, TypeError, GitError):
        return SyncHealth()


def record_health(git: GitStore, **changes: object) -> SyncHealth:
    health = replace(read_health(git), **changes)  # type: ignore[arg-type]
    try:
        path = _health_path(git)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(asdict(health), sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except (OSError, GitError) as error:
        log.warning("git.sync_health_unwritable", error=str(error))
    return health


def record_push(git: GitStore, result: PushResult) -> SyncHealth:
    """Count the push: a success resets the failures, a failure adds one."""
    if result.outcome in ("pushed", "up-to-date"):
        return record_health(git, last_push=_now(git), push_failures=0, last_push_error=None)
    if result.outcome in ("rejected", "failed"):
        health = read_health(git)
        return record_health(
            git, push_failures=health.push_failures + 1, last_push_error=result.detail[:500]
        )
    return read_health(git)


def _health_path(git: GitStore) -> Path:
    _work_tree, git_dir, _prefix = git.locations()
    return git_dir / HEALTH_NAME


def _now(git: GitStore) -> str | None:
    now: datetime | None = git.now()
    return None if now is None else now.isoformat()


def _merge_tree() -> ModuleType:
    """`memoryd.sync._merge_tree`, imported when a merge is needed: the merge machinery (every
    file format of the store) is not needed by a job that only checks the repository (issue
    15: an idle heartbeat)."""
    import memoryd.sync._merge_tree as merge_tree  # noqa: PLC0415

    return merge_tree
