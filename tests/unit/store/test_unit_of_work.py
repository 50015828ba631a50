"""The unit of work on real temporary git repositories: staging, checks, atomic apply, commit."""

from __future__ import annotations

import hashlib
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.errors import ConcurrentEditError, CorruptFileError, PathEscapeError, StoreError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.worktree import FileTransaction
from memoryd.worktree._unit import ABSENT, PlannedWrite, UnitOfWork, with_trailers

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def new_store(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    return path


def unit_for(root: Path) -> UnitOfWork:
    return UnitOfWork(GitStore(root, GitIdentity("memoryd", "memoryd@test.invalid"), lambda: NOW))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def commits(root: Path) -> int:
    result = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return int(result.stdout.strip() or 0)


def seed(root: Path, files: dict[str, str]) -> None:
    """Write and commit files as a previous memoryd run would have."""
    unit = unit_for(root)
    for relative, text in files.items():
        unit.write_text(relative, text)
    unit.apply_and_commit("seed", {})


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return new_store(tmp_path / "store")


def test_it_is_a_file_transaction(store: Path) -> None:
    transaction: FileTransaction = unit_for(store)
    assert transaction.root == store.resolve()


def test_writes_stay_in_memory_until_applied_and_are_seen_by_reads(store: Path) -> None:
    unit = unit_for(store)
    unit.write_text("life/projects/launch/summary.md", "# Launch\n")

    assert not (store / "life").exists()
    assert unit.read_text("life/projects/launch/summary.md") == "# Launch\n"
    assert unit.exists("life/projects/launch")
    assert unit.exists("life")
    assert unit.list_dir("life/projects") == ["launch"]
    assert unit.list_dir("") == ["life"]
    assert unit.read_text("life/projects/launch/items.json") is None


def test_apply_writes_and_commits_exactly_the_changed_paths_with_trailers(store: Path) -> None:
    (store / "unrelated.md").write_text("someone's draft\n")
    unit = unit_for(store)
    unit.write_text("memory/2026-03-04.md", "# 2026-03-04\n")
    unit.write_text("MEMORY.md", "# Tacit knowledge\n")

    sha = unit.apply_and_commit(
        "Heartbeat: 1 note, 1 tacit line", {"Memoryd-Run": "r-1", "Memoryd-Prompts": "x@1"}
    )

    assert sha == git(store, "rev-parse", "HEAD").strip()
    assert (store / "memory" / "2026-03-04.md").read_text() == "# 2026-03-04\n"
    files = git(store, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == ["MEMORY.md", "memory/2026-03-04.md"]
    message = git(store, "log", "-1", "--format=%B")
    assert message.startswith("Heartbeat: 1 note, 1 tacit line\n\nMemoryd-Run: r-1\n")
    trailers = git(store, "log", "-1", "--format=%(trailers:only,unfold)")
    assert trailers.split("\n")[:2] == ["Memoryd-Run: r-1", "Memoryd-Prompts: x@1"]


def test_rerunning_the_same_writes_changes_nothing_and_commits_nothing(store: Path) -> None:
    seed(store, {"life/index.md": "# Index\n", "MEMORY.md": "# Tacit\n"})
    before = os.stat(store / "life" / "index.md").st_mtime_ns
    unit = unit_for(store)
    unit.write_text("life/index.md", "# Index\n")
    unit.write_text("MEMORY.md", "# Tacit\n")

    assert unit.plan() == []
    assert unit.apply_and_commit("again", {}) is None
    assert commits(store) == 1
    assert os.stat(store / "life" / "index.md").st_mtime_ns == before


def test_a_write_left_uncommitted_by_a_killed_run_is_committed_by_its_rerun(store: Path) -> None:
    seed(store, {"a.md": "old\n"})
    (store / "a.md").write_text("new\n")  # written, then the process died before committing
    unit = unit_for(store)
    unit.write_text("a.md", "new\n")

    assert unit.plan() == []  # nothing left to write ...
    assert unit.apply_and_commit("finish", {}) is not None  # ... but it still gets committed
    assert git(store, "show", "HEAD:a.md") == "new\n"


def test_a_file_changed_since_it_was_read_stops_everything(store: Path) -> None:
    seed(store, {"life/areas/people/jane/items.json": "[]\n"})
    unit = unit_for(store)
    assert unit.read_text("life/areas/people/jane/items.json") == "[]\n"
    unit.write_text("life/areas/people/jane/items.json", '[{"id": "jane-001"}]\n')
    unit.write_text("memory/2026-03-04.md", "note\n")
    (store / "life/areas/people/jane/items.json").write_text('[{"id": "by-hand"}]\n')

    with pytest.raises(ConcurrentEditError) as caught:
        unit.apply_and_commit("lost race", {})

    assert caught.value.path == store.resolve() / "life/areas/people/jane/items.json"
    assert not (store / "memory").exists()
    assert (store / "life/areas/people/jane/items.json").read_text() == '[{"id": "by-hand"}]\n'
    assert commits(store) == 1


def test_a_file_created_after_it_was_read_as_missing_stops_everything(store: Path) -> None:
    unit = unit_for(store)
    assert unit.read_text("MEMORY.md") is None
    unit.write_text("MEMORY.md", "# Tacit\n")
    (store / "MEMORY.md").write_text("# Mine\n")

    with pytest.raises(ConcurrentEditError):
        unit.apply_and_commit("lost race", {})
    assert (store / "MEMORY.md").read_text() == "# Mine\n"


def test_escaping_paths_are_refused(store: Path) -> None:
    unit = unit_for(store)
    for bad in ("../outside.md", "/etc/passwd", "life/../../x", ".git/config", ""):
        with pytest.raises(PathEscapeError):
            unit.write_text(bad, "x")
        with pytest.raises(PathEscapeError):
            unit.read_text(bad)


def test_a_planted_symlink_never_redirects_a_write(store: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (store / "life" / "projects").mkdir(parents=True)
    (store / "life" / "projects" / "x").symlink_to(outside, target_is_directory=True)
    unit = unit_for(store)

    with pytest.raises(PathEscapeError):
        unit.write_text("life/projects/x/summary.md", "# X\n")
    with pytest.raises(PathEscapeError):
        unit.read_text("life/projects/x/summary.md")
    assert list(outside.iterdir()) == []


def test_a_symlink_planted_after_staging_is_caught_when_applying(
    store: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    unit = unit_for(store)
    unit.write_text("life/projects/x/summary.md", "# X\n")
    unit.write_text("memory/2026-03-04.md", "note\n")
    (store / "life" / "projects").mkdir(parents=True)
    (store / "life" / "projects" / "x").symlink_to(outside, target_is_directory=True)

    with pytest.raises(PathEscapeError):
        unit.apply_and_commit("redirected", {})
    assert list(outside.iterdir()) == []
    assert not (store / "memory").exists()


def test_a_symlinked_file_is_not_written_through(store: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (store / "MEMORY.md").symlink_to(victim)
    unit = unit_for(store)
    with pytest.raises(PathEscapeError):
        unit.write_text("MEMORY.md", "overwritten\n")
    assert victim.read_text() == "precious\n"


def test_plan_lists_new_digests_of_pending_changes(store: Path) -> None:
    seed(store, {"same.md": "same\n", "old/a.md": "a\n"})
    unit = unit_for(store)
    unit.write_text("same.md", "same\n")
    unit.write_text("changed.md", "new\n")
    unit.move_dir("old", "new")

    assert unit.plan() == [
        PlannedWrite("changed.md", sha256("new\n")),
        PlannedWrite("new/a.md", sha256("a\n")),
        PlannedWrite("old/a.md", ABSENT),
    ]


def test_move_dir_is_staged_seen_and_committed_as_a_rename(store: Path) -> None:
    seed(
        store,
        {
            "life/projects/launch/summary.md": "# Launch\n",
            "life/projects/launch/items.json": "[]\n",
            "life/projects/other/summary.md": "# Other\n",
        },
    )
    unit = unit_for(store)
    unit.move_dir("life/projects/launch", "life/archives/projects/launch")

    assert not unit.exists("life/projects/launch")
    assert unit.list_dir("life/projects") == ["other"]
    assert unit.read_text("life/archives/projects/launch/summary.md") == "# Launch\n"
    assert unit.read_text("life/projects/launch/summary.md") is None
    unit.write_text("life/archives/projects/launch/items.json", '[{"id": "launch-001"}]\n')
    assert (store / "life/projects/launch/summary.md").exists()  # nothing on disk yet

    unit.apply_and_commit("Archive launch", {})

    assert not (store / "life/projects/launch").exists()
    archived = store / "life/archives/projects/launch"
    assert (archived / "summary.md").read_text() == "# Launch\n"
    assert (archived / "items.json").read_text() == '[{"id": "launch-001"}]\n'
    status = git(store, "show", "-M", "--name-status", "--format=", "HEAD")
    assert "R100\tlife/projects/launch/summary.md\tlife/archives/projects/launch/summary.md" in (
        status
    )
    assert git(store, "status", "--porcelain") == ""


def test_move_there_and_back_in_one_unit_changes_nothing(store: Path) -> None:
    seed(store, {"life/projects/p/summary.md": "# P\n"})
    unit = unit_for(store)
    unit.move_dir("life/projects/p", "life/archives/projects/p")
    unit.move_dir("life/archives/projects/p", "life/projects/p")

    assert unit.plan() == []
    assert unit.apply_and_commit("no-op", {}) is None
    assert (store / "life/projects/p/summary.md").read_text() == "# P\n"


def test_move_dir_refuses_a_missing_source_or_an_existing_destination(store: Path) -> None:
    seed(store, {"a/x.md": "x\n", "b/y.md": "y\n"})
    unit = unit_for(store)
    with pytest.raises(StoreError, match="no such folder"):
        unit.move_dir("missing", "c")
    with pytest.raises(StoreError, match="already exists"):
        unit.move_dir("a", "b")
    with pytest.raises(StoreError, match="into itself"):
        unit.move_dir("a", "a/inner")


def test_a_moved_folder_carries_its_staged_writes(store: Path) -> None:
    seed(store, {"p/summary.md": "# P\n"})
    unit = unit_for(store)
    unit.write_text("p/items.json", "[]\n")
    unit.move_dir("p", "q")
    unit.write_text("p/summary.md", "# A new P\n")

    unit.apply_and_commit("shuffle", {})

    assert (store / "q/items.json").read_text() == "[]\n"
    assert (store / "q/summary.md").read_text() == "# P\n"
    assert (store / "p/summary.md").read_text() == "# A new P\n"


def test_reading_a_non_utf8_file_reports_it_as_corrupt(store: Path) -> None:
    (store / "bad.md").write_bytes(b"\xff\xfe not text")
    with pytest.raises(CorruptFileError, match=r"bad\.md"):
        unit_for(store).read_text("bad.md")


def test_a_unit_is_applied_once(store: Path) -> None:
    unit = unit_for(store)
    unit.write_text("a.md", "a\n")
    unit.apply_and_commit("once", {})
    with pytest.raises(StoreError, match="already applied"):
        unit.write_text("b.md", "b\n")
    with pytest.raises(StoreError, match="already applied"):
        unit.apply_and_commit("twice", {})


def test_trailers_are_validated() -> None:
    assert with_trailers("Subject\n", {"Memoryd-Run": "r1"}) == "Subject\n\nMemoryd-Run: r1\n"
    assert with_trailers("Subject", {}) == "Subject\n"
    with pytest.raises(ValueError, match="trailer"):
        with_trailers("Subject", {"Bad Key": "x"})
    with pytest.raises(ValueError, match="trailer"):
        with_trailers("Subject", {"Key": "two\nlines"})
    with pytest.raises(ValueError, match="message"):
        with_trailers("  \n", {})


def test_memoryd_temporary_files_are_not_listed(store: Path) -> None:
    (store / "life").mkdir()
    (store / "life" / ".index.md.abc123.tmp").write_text("half\n")
    (store / "life" / "index.md").write_text("# Index\n")
    assert unit_for(store).list_dir("life") == ["index.md"]


def test_a_removed_file_is_gone_from_the_view_then_deleted_and_committed(store: Path) -> None:
    seed(store, {"agents/ops/old-topic.md": "# Old\n", "agents/ops/keep.md": "# Keep\n"})
    before = commits(store)
    unit = unit_for(store)
    unit.remove("agents/ops/old-topic.md")
    unit.remove("agents/ops/never-was.md")  # nothing to do
    assert unit.read_text("agents/ops/old-topic.md") is None
    assert not unit.exists("agents/ops/old-topic.md")
    assert unit.list_dir("agents/ops") == ["keep.md"]
    assert unit.plan() == [PlannedWrite("agents/ops/old-topic.md", ABSENT)]
    assert unit.apply_and_commit("consolidate", {}) is not None
    assert not (store / "agents/ops/old-topic.md").exists()
    assert (store / "agents/ops/keep.md").exists()
    assert commits(store) == before + 1
    assert git(store, "status", "--porcelain") == ""
    assert "D\tagents/ops/old-topic.md" in git(store, "show", "--name-status", "--format=")


def test_a_file_changed_after_its_removal_was_staged_stops_everything(store: Path) -> None:
    seed(store, {"agents/ops/old-topic.md": "# Old\n"})
    unit = unit_for(store)
    unit.remove("agents/ops/old-topic.md")
    (store / "agents/ops/old-topic.md").write_text(
        "# Old\n- a tip added by hand\n", encoding="utf-8"
    )
    with pytest.raises(ConcurrentEditError):
        unit.apply_and_commit("consolidate", {})
    assert "a tip added by hand" in (store / "agents/ops/old-topic.md").read_text(encoding="utf-8")
