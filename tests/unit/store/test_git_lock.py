"""index.lock handling and process hygiene of the git adapter, on real repositories."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from memoryd.errors import GitError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.gitrepo._lock import lock_is_held

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main"], cwd=path, check=True)
    return path


def plant_lock(repo: Path, age: timedelta) -> Path:
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"")
    stamp = (NOW - age).timestamp()
    os.utime(lock, (stamp, stamp))
    return lock


def store_at(repo: Path, sleep: Callable[[float], None] | None = None) -> GitStore:
    sleeps: list[float] = []
    return GitStore(
        repo,
        GitIdentity("memoryd", "memoryd@test.invalid"),
        lambda: NOW,
        stale_lock_after=timedelta(minutes=10),
        lock_timeout_seconds=0.2,
        lock_poll_seconds=0.05,
        sleep=sleep if sleep is not None else sleeps.append,
    )


def head_or_none(repo: Path) -> str | None:
    result = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or None


def child_pids() -> set[int]:
    children: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            text = (task / "children").read_text()
        except OSError:  # a thread (GitPython's timeout watchdog) ended meanwhile
            continue
        children.update(int(pid) for pid in text.split())
    return children


def test_an_old_lock_nobody_holds_is_removed_and_logged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    lock = plant_lock(repo, timedelta(hours=2))
    (repo / "a.md").write_text("a\n")

    with capture_logs() as logs:
        sha = store_at(repo).commit(["a.md"], "after a crash")

    assert sha is not None and sha == head_or_none(repo)
    assert not lock.exists()
    removed = [entry for entry in logs if entry["event"] == "store.stale_lock_removed"]
    assert len(removed) == 1
    assert removed[0]["log_level"] == "warning"
    assert removed[0]["lock"] == str(lock.resolve())


def test_a_young_lock_is_waited_for_then_git_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    lock = plant_lock(repo, timedelta(seconds=30))
    (repo / "a.md").write_text("a\n")
    sleeps: list[float] = []
    store = store_at(repo, sleeps.append)

    with pytest.raises(GitError, match=r"index\.lock"):
        store.commit(["a.md"], "blocked")

    assert lock.exists()
    assert head_or_none(repo) is None
    # It waited, in polls, for about the configured timeout, and no longer.
    assert sleeps and abs(sum(sleeps) - 0.2) < 0.06


def test_a_lock_released_while_waiting_lets_the_commit_through(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    lock = plant_lock(repo, timedelta(seconds=5))
    (repo / "a.md").write_text("a\n")

    def other_git_finishes(_seconds: float) -> None:
        lock.unlink(missing_ok=True)

    assert store_at(repo, other_git_finishes).commit(["a.md"], "waited") is not None


def test_an_old_lock_held_open_by_a_live_process_is_not_removed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    lock = plant_lock(repo, timedelta(hours=2))
    (repo / "a.md").write_text("a\n")
    with lock.open("rb"):  # this very process now "holds" the lock
        assert lock_is_held(lock.resolve(), (repo.resolve(),), Path("/proc"))
        with pytest.raises(GitError):
            store_at(repo).commit(["a.md"], "blocked")
    assert lock.exists()


def test_a_git_process_working_in_the_repository_counts_as_holding_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    lock = plant_lock(repo, timedelta(hours=2)).resolve()
    # `git hash-object --stdin` waits on its stdin: a live git process with the repo as cwd.
    worker = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:  # Popen returns once the exec succeeded, so the process is git by now
        assert lock_is_held(lock, (repo.resolve(),), Path("/proc"))
    finally:
        worker.communicate(b"x")
    assert not lock_is_held(lock, (repo.resolve(),), Path("/proc"))


def test_without_proc_a_lock_always_counts_as_held(tmp_path: Path) -> None:
    assert lock_is_held(tmp_path / "index.lock", (tmp_path,), tmp_path / "no-proc")


def test_fifty_commits_leave_no_git_process_behind(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = store_at(repo)
    before = child_pids()
    for number in range(50):
        (repo / "counter.md").write_text(f"{number}\n")
        store.commit(["counter.md"], f"commit {number}")
        store.status()
        store.head()

    assert child_pids() - before == set()
    count = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert count.stdout.strip() == "50"
