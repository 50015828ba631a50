"""Pull and push against a real local bare remote shared by two clones (two "machines")."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from memoryd.store import sync
from memoryd.store.git import GitIdentity, GitStore

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def commit_file(store: GitStore, name: str, text: str) -> str:
    (store.store_root / name).write_text(text, encoding="utf-8")
    sha = store.commit([name], f"write {name}")
    assert sha is not None
    return sha


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Path, GitStore, GitStore]:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    stores = []
    for name in ("a", "b"):
        root = tmp_path / name
        store = GitStore(root, GitIdentity("memoryd", "m@localhost"), lambda: NOW)
        store.init()
        git(root, "remote", "add", "origin", str(remote))
        stores.append(store)
    commit_file(stores[0], "seed.md", "seed\n")
    assert sync.push(stores[0], "origin").outcome == "pushed"
    assert sync.pull(stores[1], "origin").outcome == "rebased"
    return remote, stores[0], stores[1]


def test_memory_pushed_elsewhere_is_kept_and_ours_lands_on_top(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    remote, a, b = machines
    theirs = commit_file(a, "theirs.md", "from a\n")
    assert sync.push(a, "origin").outcome == "pushed"
    ours = commit_file(b, "ours.md", "from b\n")

    # Without a pull first, the remote refuses: logged, nothing lost locally.
    with capture_logs() as logs:
        refused = sync.push(b, "origin")
    assert refused.outcome == "rejected"
    assert [e["event"] for e in logs] == ["git.push_failed"]
    assert b.head() == ours

    assert sync.pull(b, "origin").outcome == "rebased"
    assert (b.store_root / "theirs.md").read_text() == "from a\n"
    assert (b.store_root / "ours.md").read_text() == "from b\n"
    assert sync.push(b, "origin").outcome == "pushed"
    log = git(remote, "log", "--format=%s", "main").splitlines()
    assert log == ["write ours.md", "write theirs.md", "write seed.md"]
    assert b.contains(theirs)
    assert sync.push(b, "origin").outcome == "up-to-date"


def test_a_conflict_keeps_both_sides_and_the_local_commit(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    remote, a, b = machines
    commit_file(a, "shared.md", "a's version\n")
    sync.push(a, "origin")
    ours = commit_file(b, "shared.md", "b's version\n")
    with capture_logs() as logs:
        result = sync.pull(b, "origin")
    assert result.outcome == "conflict"
    assert logs[-1]["event"] == "git.pull_failed"
    # Nothing discarded: our commit is HEAD, our file is intact, no rebase is left half done.
    assert b.head() == ours
    assert (b.store_root / "shared.md").read_text() == "b's version\n"
    assert not b.tracked_changes()
    assert sync.push(b, "origin").outcome == "rejected"
    assert git(remote, "show", "main:shared.md") == "a's version\n"
    # And the next job can still commit locally.
    commit_file(b, "later.md", "still writable\n")


def test_uncommitted_tracked_changes_postpone_the_pull(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    _remote, a, b = machines
    commit_file(a, "theirs.md", "from a\n")
    sync.push(a, "origin")
    (b.store_root / "seed.md").write_text("half-done write\n", encoding="utf-8")
    before = b.head()
    assert sync.pull(b, "origin").outcome == "skipped"
    assert b.head() == before
    assert (b.store_root / "seed.md").read_text() == "half-done write\n"


def test_an_unreachable_remote_is_a_logged_failure_not_an_error(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = GitStore(root, GitIdentity("memoryd", "m@localhost"), lambda: NOW)
    store.init()
    git(root, "remote", "add", "origin", str(tmp_path / "missing.git"))
    head = commit_file(store, "a.md", "a\n")
    with capture_logs() as logs:
        assert sync.pull(store, "origin").outcome == "failed"
        assert sync.push(store, "origin").outcome == "failed"
    assert [e["event"] for e in logs] == ["git.pull_failed", "git.push_failed"]
    assert store.head() == head


def test_an_empty_remote_receives_the_first_push(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    store = GitStore(tmp_path / "store", GitIdentity("memoryd", "m@localhost"), lambda: NOW)
    store.init()
    git(store.store_root, "remote", "add", "origin", str(remote))
    assert sync.pull(store, "origin").outcome == "no-remote-branch"
    assert sync.push(store, "origin").outcome == "skipped"  # nothing committed yet
    head = commit_file(store, "a.md", "a\n")
    assert sync.push(store, "origin").outcome == "pushed"
    assert git(remote, "rev-parse", "main").strip() == head
