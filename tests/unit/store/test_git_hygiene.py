"""Each git hostility of a shared host, on real repositories: hostile configuration, a live
index.lock, a detached HEAD, operations in progress (a person's, an older memoryd's), and a branch
move killed half-way."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from memoryd.errors import EXIT_CONFIG, EXIT_TEMPFAIL, GitBusyError, GitStateError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.gitrepo import _tree as gittree
from memoryd.sync import _remote as sync

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
EMAIL = "memoryd@test.invalid"


def git(cwd: Path, *args: str, email: str = "p@p", check: bool = True) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=x", "-c", f"user.email={email}", *args],
        check=check,
        capture_output=True,
        text=True,
    ).stdout


def store_at(root: Path, **options: float) -> GitStore:
    return GitStore(root, GitIdentity("memoryd", EMAIL), lambda: NOW, **options)  # type: ignore[arg-type]


def commit_file(store: GitStore, name: str, text: str) -> str:
    (store.store_root / name).write_text(text, encoding="utf-8")
    sha = store.commit([name], f"write {name}")
    assert sha is not None
    return sha


def test_autocrlf_with_safecrlf_does_not_stop_memoryd_nor_change_its_bytes(tmp_path: Path) -> None:
    store = store_at(tmp_path / "s")
    store.init()
    git(store.store_root, "config", "core.autocrlf", "true")
    git(store.store_root, "config", "core.safecrlf", "true")
    (store.store_root / "MEMORY.md").write_text("# Tacit\n\n- a\n", encoding="utf-8")
    # The person's git refuses this very commit; memoryd's fixed configuration does not.
    plain = subprocess.run(
        ["git", "-C", str(store.store_root), "add", "MEMORY.md"], capture_output=True, check=False
    )
    assert plain.returncode != 0
    assert store.commit(["MEMORY.md"], "tacit") is not None
    committed = subprocess.run(
        ["git", "-C", str(store.store_root), "show", "HEAD:MEMORY.md"],
        capture_output=True,
        check=True,
    ).stdout
    assert committed == b"# Tacit\n\n- a\n"
    assert store.status().clean


def test_an_fsmonitor_command_in_the_config_is_never_run_by_memoryd(tmp_path: Path) -> None:
    store = store_at(tmp_path / "s")
    store.init()
    commit_file(store, "a.md", "a\n")
    witness = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {witness}\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    git(store.store_root, "config", "core.fsmonitor", str(hook))
    (store.store_root / "a.md").write_text("b\n", encoding="utf-8")
    assert store.status().modified == ("a.md",)
    commit_file(store, "b.md", "b\n")
    assert not witness.exists()
    git(store.store_root, "status")  # the person's git does run it: the test can fail
    assert witness.exists()


def test_a_live_index_lock_is_transient(tmp_path: Path) -> None:
    store = store_at(tmp_path / "s", lock_timeout_seconds=0.2, lock_poll_seconds=0.05)
    store.init()
    commit_file(store, "a.md", "a\n")
    lock = store.store_root / ".git" / "index.lock"
    holder = subprocess.Popen(
        [
            "python3",
            "-c",
            f"import sys; f = open({str(lock)!r}, 'a'); print('held', flush=True); "
            "sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        (store.store_root / "b.md").write_text("b\n", encoding="utf-8")
        with pytest.raises(GitBusyError) as raised:
            store.commit(["b.md"], "b")
        assert raised.value.exit_code == EXIT_TEMPFAIL
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
        lock.unlink(missing_ok=True)


def test_a_detached_head_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    store = store_at(tmp_path / "s")
    store.init()
    first = commit_file(store, "a.md", "a\n")
    git(store.store_root, "checkout", "--quiet", "--detach", first)
    (store.store_root / "b.md").write_text("b\n", encoding="utf-8")
    with pytest.raises(GitStateError, match="detached") as raised:
        store.commit(["b.md"], "b")
    assert raised.value.exit_code == EXIT_CONFIG
    with pytest.raises(GitStateError):
        sync.recover(store)
    assert git(store.store_root, "rev-parse", "HEAD").strip() == first


def _conflicting_rebase(
    tmp_path: Path, email: str, *, killed: bool = False
) -> tuple[GitStore, str, str]:
    """A clone `b` whose rebase onto the remote stopped on a conflict (or, `killed`, stopped
    after replaying a commit, as a rebase killed half-way leaves it), run by `email`."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    a, b = store_at(tmp_path / "a"), store_at(tmp_path / "b")
    for store in (a, b):
        store.init()
        git(store.store_root, "remote", "add", "origin", str(remote))
    commit_file(a, "seed.md", "seed\n")
    sync.push(a, "origin")
    sync.pull(b, "origin")
    commit_file(a, "shared.md", "a's line\n")
    sync.push(a, "origin")
    mine = commit_file(b, "mine.md" if killed else "shared.md", "b's line\n")
    git(b.store_root, "fetch", "--quiet", "origin")
    stop = ["-x", "false"] if killed else []
    git(b.store_root, "rebase", *stop, "origin/main", email=email, check=False)
    assert b.operation_in_progress() == "rebase"
    return b, mine, git(b.store_root, "rev-parse", "origin/main").strip()


def test_a_persons_rebase_in_progress_is_never_touched(tmp_path: Path) -> None:
    b, _mine, _onto = _conflicting_rebase(tmp_path, "person@example.org")
    # The conflicting commit is memoryd's, but the rebase is the person's: it stays, untouched.
    git(
        b.store_root, "commit", "--quiet", "--allow-empty", "-m", "person", email="p@x", check=False
    )
    with pytest.raises(GitStateError, match="rebase"):
        sync.recover(b)
    assert b.operation_in_progress() == "rebase"


def test_an_older_memoryds_rebase_is_cleared_keeping_the_facts_filed_since(
    tmp_path: Path,
) -> None:
    b, mine, onto = _conflicting_rebase(tmp_path, EMAIL, killed=True)
    # An older memoryd went on committing on top of its own half-done rebase.
    (b.store_root / "later.md").write_text("filed during the rebase\n", encoding="utf-8")
    git(b.store_root, "add", "later.md")
    git(b.store_root, "commit", "--quiet", "--no-verify", "-m", "heartbeat", email=EMAIL)
    with capture_logs() as logs:
        sync.recover(b)
    events = [e["event"] for e in logs]
    assert "git.rebase_cleared" in events and "git.rebase_commits_kept" in events
    assert b.operation_in_progress() is None
    assert b.branch() == "main"
    assert b.contains(mine)
    assert (b.store_root / "later.md").read_text() == "filed during the rebase\n"
    assert (b.store_root / "mine.md").read_text() == "b's line\n"
    assert b.status().clean
    assert sync.pull(b, "origin").outcome in ("merged", "up-to-date")
    assert b.contains(onto)
    assert sync.push(b, "origin").outcome == "pushed"


def test_a_branch_move_killed_half_way_is_finished_on_start(tmp_path: Path) -> None:
    store = store_at(tmp_path / "s")
    store.init()
    old = commit_file(store, "a.md", "one\n")
    new = commit_file(store, "a.md", "two\n")
    commit_file(store, "b.md", "b\n")
    git(store.store_root, "reset", "--quiet", "--hard", old)
    # As if killed after the branch moved, before the work tree followed.
    _work, git_dir, _prefix = store.locations()
    marker = git_dir / gittree.MARKER_NAME
    marker.write_text(
        json.dumps({"branch": "main", "old": old, "new": new, "paths": ["a.md"]}), encoding="utf-8"
    )
    git(store.store_root, "update-ref", "refs/heads/main", new)
    assert not store.status().clean  # the work tree still shows the old content
    with capture_logs() as logs:
        sync.recover(store)
    assert [e["action"] for e in logs if e["event"] == "git.sync_recovered"] == ["finished"]
    assert (store.store_root / "a.md").read_text() == "two\n"
    assert store.status().clean
    assert not marker.exists()


def test_a_branch_move_killed_before_the_branch_moved_is_dropped(tmp_path: Path) -> None:
    store = store_at(tmp_path / "s")
    store.init()
    old = commit_file(store, "a.md", "one\n")
    _work, git_dir, _prefix = store.locations()
    marker = git_dir / gittree.MARKER_NAME
    marker.write_text(
        json.dumps({"branch": "main", "old": old, "new": "0" * 40, "paths": []}), encoding="utf-8"
    )
    assert gittree.settle_interrupted_move(store) == "dropped"
    assert not marker.exists()
    assert store.head() == old
    marker.write_text("not json", encoding="utf-8")
    assert gittree.settle_interrupted_move(store) == "dropped"


def test_a_branch_move_brings_deletions_links_and_modes_and_keeps_a_local_edit(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path / "s")
    store.init()
    (store.store_root / "gone").mkdir()
    commit_file(store, "gone/a.md", "a\n")
    old = commit_file(store, "kept.md", "one\n")
    (store.store_root / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    (store.store_root / "run.sh").chmod(0o755)
    (store.store_root / "link.md").symlink_to("kept.md")
    (store.store_root / "gone" / "a.md").unlink()
    (store.store_root / "kept.md").write_text("two\n", encoding="utf-8")
    new = store.commit(["run.sh", "link.md", "gone/a.md", "kept.md"], "changes")
    assert new is not None
    git(store.store_root, "reset", "--quiet", "--hard", old)
    assert (store.store_root / "gone" / "a.md").exists()
    (store.store_root / "kept.md").write_text("edited by a person meanwhile\n", encoding="utf-8")
    git(store.store_root, "update-ref", "refs/heads/main", old)
    with capture_logs() as logs:
        kept = gittree.move_branch(store, "main", old, new)
    assert kept == ["kept.md"]
    assert [e["path"] for e in logs if e["event"] == "git.sync_kept_local"] == ["kept.md"]
    assert (store.store_root / "kept.md").read_text() == "edited by a person meanwhile\n"
    assert not (store.store_root / "gone").exists()
    assert os.readlink(store.store_root / "link.md") == "kept.md"
    assert os.access(store.store_root / "run.sh", os.X_OK)
    assert store.status().modified == ("kept.md",)
    assert gittree.blocking_paths(store, old, new) == ["kept.md"]


def test_no_commit_is_made_while_a_branch_move_is_unfinished(tmp_path: Path) -> None:
    store = store_at(tmp_path / "s")
    store.init()
    old = commit_file(store, "a.md", "one\n")
    _work, git_dir, _prefix = store.locations()
    (git_dir / gittree.MARKER_NAME).write_text(
        json.dumps({"branch": "main", "old": old, "new": old, "paths": []}), encoding="utf-8"
    )
    (store.store_root / "b.md").write_text("b\n", encoding="utf-8")
    with pytest.raises(GitBusyError, match="unfinished"):
        store.commit(["b.md"], "b")
    sync.recover(store)
    assert store.commit(["b.md"], "b") is not None
