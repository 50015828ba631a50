"""The sync's health for `memoryd status`: how this clone stands against the shared remote.

With `git.push`, `status` shows the branch, how many commits this host has that the remote lacks
(`ahead`, i.e. unpushed) and the reverse (`behind`), as of the last fetch (status never talks to
the network), when a pull and a push last succeeded, and how many jobs in a row failed to push;
`failing` once that reaches `git.push_failure_limit`. Read-only: nothing is fetched or written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import GitError
from memoryd.settings import Settings

if TYPE_CHECKING:
    from memoryd.gitrepo import GitStore


def sync_report(settings: Settings) -> dict[str, Any] | None:
    """The `sync` block of the status report; None when the store is not shared (`git.push`)."""
    if not settings.git.push:
        return None
    # Imported here: git is only run when the store is shared, and `status` must start fast
    # otherwise (tests/unit/test_architecture.py).
    from memoryd import sync  # noqa: PLC0415
    from memoryd.gitrepo import GitIdentity, GitStore  # noqa: PLC0415

    identity = GitIdentity(settings.git.author_name, settings.git.author_email)
    git = GitStore(settings.store.path, identity, None)
    report: dict[str, Any] = {"remote": settings.git.remote}
    try:
        branch = git.branch()
        report["branch"] = branch
        report.update(_ahead_behind(git, settings.git.remote, branch))
        health = sync.read_health(git)
    except GitError as error:
        report["error"] = str(error)
        return report
    report.update(
        last_pull=health.last_pull,
        last_push=health.last_push,
        push_failures=health.push_failures,
        last_push_error=health.last_push_error,
        failing=health.push_failures >= settings.git.push_failure_limit,
    )
    return report


def repository_problem(store: Path) -> str | None:
    """What stops memoryd from writing to the store's repository, read from the git directory's
    files alone (no git process: `status` stays fast): a detached HEAD, or a
    rebase, merge, cherry-pick or revert in progress. None when there is nothing to say."""
    git_dir = _git_dir(store)
    if git_dir is None:
        return None
    for name, operation in (
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("MERGE_HEAD", "merge"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
    ):
        if (git_dir / name).exists():
            return (
                f"a {operation} is in progress: memoryd writes nothing until it is finished or "
                f"aborted (a rebase memoryd itself left is cleared by its next job)"
            )
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return "HEAD is detached: memoryd refuses to commit until the branch is checked out"
    return None


def host_code_clashes(store: Path, host: str) -> list[str]:
    """The other hosts of a shared store whose fact ids share this host's range (their names
    give the same `host_id_code`); read from the hosts' records in the store."""
    import json  # noqa: PLC0415 - only `check` asks

    from memoryd.store.hosts import HOSTS_DIR  # noqa: PLC0415
    from memoryd.store.items import host_id_code  # noqa: PLC0415

    mine = host_id_code(host)
    clashes = []
    for record in sorted((store / HOSTS_DIR).glob("*.json")):
        try:
            name = json.loads(record.read_text(encoding="utf-8")).get("host")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(name, str) and name != host and host_id_code(name) == mine:
            clashes.append(name)
    return clashes


def _git_dir(store: Path) -> Path | None:
    folder = store.resolve()
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # a linked work tree or submodule: `gitdir: <path>`
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                return (candidate / text.removeprefix("gitdir:").strip()).resolve()
    return None


def _ahead_behind(git: GitStore, remote: str, branch: str | None) -> dict[str, int | None]:
    if branch is None or git.head() is None:
        return {"ahead": 0 if branch else None, "behind": None}
    tracking = f"refs/remotes/{remote}/{branch}"
    status, _ = git.plumbing("rev-parse", "--verify", "--quiet", tracking, check=False)
    if status != 0:
        count = git.plumbing("rev-list", "--count", "HEAD")[1].decode().strip()
        return {"ahead": int(count), "behind": None}  # never fetched: all of it is unpushed
    counts = git.plumbing("rev-list", "--left-right", "--count", f"HEAD...{tracking}")[1]
    ahead, behind = (int(n) for n in counts.decode().split())
    return {"ahead": ahead, "behind": behind}


def sync_lines(report: dict[str, Any] | None) -> list[str]:
    """The sync block for people (none when the store is not shared)."""
    if report is None:
        return []
    if "error" in report:
        return [f"sync with {report['remote']}: cannot tell ({report['error']})"]
    lines = [
        f"sync with {report['remote']}/{report['branch'] or '(detached HEAD)'}: "
        f"{report['ahead'] if report['ahead'] is not None else '?'} unpushed, "
        f"{report['behind'] if report['behind'] is not None else '?'} behind (as of the last "
        f"fetch); last pull {report['last_pull'] or 'never'}, last push "
        f"{report['last_push'] or 'never'}"
    ]
    if report["failing"]:
        lines.append(
            f"SYNC FAILING: the push failed {report['push_failures']} jobs in a row: "
            f"{report['last_push_error']}"
        )
    elif report["push_failures"]:
        lines.append(f"push failed {report['push_failures']} jobs in a row (retried each job)")
    return lines
