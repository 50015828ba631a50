"""Pull and push against a real local bare remote shared by two clones (two "machines")."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.sync import _remote as sync

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
    assert sync.pull(stores[1], "origin").outcome == "fast-forward"
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

    assert sync.pull(b, "origin").outcome == "merged"
    assert (b.store_root / "theirs.md").read_text() == "from a\n"
    assert (b.store_root / "ours.md").read_text() == "from b\n"
    assert b.status().clean
    assert sync.push(b, "origin").outcome == "pushed"
    log = git(remote, "log", "--format=%s", "--topo-order", "main").splitlines()
    assert log[0].startswith("memoryd: merge origin/main by meaning")
    assert set(log[1:3]) == {"write ours.md", "write theirs.md"}
    assert b.contains(theirs) and b.contains(ours)
    assert sync.push(b, "origin").outcome == "up-to-date"


def test_both_sides_changing_one_file_never_conflicts(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    remote, a, b = machines
    commit_file(a, "shared.md", "a's version\n")
    sync.push(a, "origin")
    ours = commit_file(b, "shared.md", "b's version\n")
    with capture_logs() as logs:
        result = sync.pull(b, "origin")
    assert result.outcome == "merged"
    assert "git.pull_failed" not in [e["event"] for e in logs]
    # Both sides' lines are kept; our commit stays in history; nothing is left half done.
    assert (b.store_root / "shared.md").read_text() == "a's version\nb's version\n"
    assert b.contains(ours)
    assert b.status().clean
    assert b.operation_in_progress() is None
    assert sync.push(b, "origin").outcome == "pushed"
    assert git(remote, "show", "main:shared.md") == "a's version\nb's version\n"
    commit_file(b, "later.md", "still writable\n")


def test_a_file_outside_the_store_changed_on_both_sides_keeps_the_remotes(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    _remote, a, b = machines
    commit_file(a, "data.bin", "a\n")
    sync.push(a, "origin")
    mine = commit_file(b, "data.bin", "b\n")
    with capture_logs() as logs:
        assert sync.pull(b, "origin").outcome == "merged"
    kept = [e for e in logs if e["event"] == "git.merge_kept_remote"]
    assert kept and kept[0]["path"] == "data.bin"
    assert (b.store_root / "data.bin").read_text() == "a\n"
    assert b.contains(mine)  # ours is still in history


def test_uncommitted_changes_postpone_the_pull_only_where_the_remote_changed_the_file(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    _remote, a, b = machines
    commit_file(a, "seed.md", "seed, changed by a\n")
    sync.push(a, "origin")
    (b.store_root / "seed.md").write_text("half-done write\n", encoding="utf-8")
    before = b.head()
    assert sync.pull(b, "origin").outcome == "skipped"
    assert b.head() == before
    assert (b.store_root / "seed.md").read_text() == "half-done write\n"


def test_uncommitted_changes_elsewhere_do_not_block_the_pull(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    _remote, a, b = machines
    commit_file(b, "mine.md", "mine\n")
    sync.push(b, "origin")
    sync.pull(a, "origin")
    commit_file(a, "theirs.md", "from a\n")
    sync.push(a, "origin")
    (b.store_root / "mine.md").write_text("withheld hand edit\n", encoding="utf-8")
    assert sync.pull(b, "origin").outcome == "fast-forward"
    assert (b.store_root / "theirs.md").read_text() == "from a\n"
    assert (b.store_root / "mine.md").read_text() == "withheld hand edit\n"
    assert b.status().modified == ("mine.md",)


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


def test_a_remote_with_an_unrelated_history_is_never_merged(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    stores = []
    for name in ("a", "b"):
        store = GitStore(tmp_path / name, GitIdentity("memoryd", "m@localhost"), lambda: NOW)
        store.init()
        git(store.store_root, "remote", "add", "origin", str(remote))
        commit_file(store, f"{name}.md", f"{name}\n")
        stores.append(store)
    assert sync.push(stores[0], "origin").outcome == "pushed"
    head = stores[1].head()
    with capture_logs() as logs:
        result = sync.pull(stores[1], "origin")
    assert result.outcome == "failed" and "no history" in result.detail
    assert logs[-1]["event"] == "git.pull_failed"
    assert stores[1].head() == head
    assert not (stores[1].store_root / "a.md").exists()


def test_a_pull_stopped_half_way_by_a_live_index_lock_stops_the_job_until_finished(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    from memoryd.errors import GitBusyError
    from memoryd.gitrepo import _tree as gittree

    _remote, a, b = machines
    commit_file(a, "theirs.md", "from a\n")
    sync.push(a, "origin")
    busy = GitStore(b.store_root, b.identity, lambda: NOW, lock_timeout_seconds=0.1)
    lock = b.store_root / ".git" / "index.lock"
    holder = subprocess.Popen(
        ["python3", "-c", f"f = open({str(lock)!r}, 'a'); print('held', flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(GitBusyError):
            sync.pull(busy, "origin")  # the branch moved; the index could not follow
        (b.store_root / "mine.md").write_text("x\n", encoding="utf-8")
        with pytest.raises(GitBusyError):
            busy.commit(["mine.md"], "nothing is committed meanwhile")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
        lock.unlink(missing_ok=True)
    sync.recover(b)
    assert not (b.store_root / ".git" / gittree.MARKER_NAME).exists()
    assert (b.store_root / "theirs.md").read_text() == "from a\n"
    assert b.status().untracked == ("mine.md",)
    assert b.commit(["mine.md"], "now") is not None


def test_an_uncommitted_edit_is_carried_over_only_without_contradiction(
    machines: tuple[Path, GitStore, GitStore],
) -> None:
    _remote, a, b = machines
    items = "life/areas/people/jane-doe/items.json"

    def fact(text: str, count: int = 0) -> str:
        return json.dumps(
            [
                {
                    "id": "jane-doe-001",
                    "fact": text,
                    "category": "context",
                    "timestamp": "2026-01-01",
                    "status": "active",
                    "supersededBy": None,
                    "relatedEntities": [],
                    "lastAccessed": "2026-01-01",
                    "accessCount": count,
                    "recordedAt": "2026-01-01",
                    "source": {"agent": "a", "session": "s", "file": "f", "lines": [1, 2]},
                }
            ],
            indent=2,
        )

    for store in (a, b):
        (store.store_root / items).parent.mkdir(parents=True, exist_ok=True)
    commit_file(a, items, fact("Works at Acme"))
    sync.push(a, "origin")
    sync.pull(b, "origin")
    commit_file(a, items, fact("Works at Acme", count=1))  # memoryd's access bump
    sync.push(a, "origin")
    (b.store_root / items).write_text(fact("Works at Acme Corp"), encoding="utf-8")
    assert sync.pull(b, "origin", carry_edits=True).outcome == "fast-forward"
    carried = json.loads((b.store_root / items).read_text())[0]
    assert (carried["fact"], carried["accessCount"]) == ("Works at Acme Corp", 1)
    assert b.status().modified == (items,)

    commit_file(a, items, fact("Works at Initech", count=1))  # a contradiction of the edit
    sync.push(a, "origin")
    assert sync.pull(b, "origin", carry_edits=True).outcome == "skipped"
    assert json.loads((b.store_root / items).read_text())[0]["fact"] == "Works at Acme Corp"
