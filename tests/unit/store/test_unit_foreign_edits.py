"""Edits others left uncommitted in the store: committed first, after a secret scan."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.support.foreign_edits import (
    SECRET,
    committed,
    fake_scanner,
    git,
    seeded_store,
    store_at,
    unit_for,
)

from memoryd.worktree._foreign import TOO_LARGE, WithheldFile
from memoryd.worktree._unit import ABSENT, content_digest, undo_own_writes


def test_foreign_edits_are_committed_in_their_own_commit(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n", "gone.md": "bye\n"})
    (root / "MEMORY.md").write_text("# Tacit\n\n- edited by hand\n")
    (root / "life" / "resources" / "recipes").mkdir(parents=True)
    (root / "life" / "resources" / "recipes" / "summary.md").write_text("# Recipes\n")
    (root / "gone.md").unlink()
    (root / ".index.md.x1y2.tmp").write_text("memoryd's own scratch\n")
    unit = unit_for(root)
    unit.write_text("memory/2026-03-04.md", "a note\n")

    result = unit.commit_foreign_edits(fake_scanner)

    assert result.commit == git(root, "rev-parse", "HEAD").strip()
    assert result.committed == ("MEMORY.md", "gone.md", "life/resources/recipes/summary.md")
    assert committed(root) == list(result.committed)
    assert result.withheld == ()
    assert git(root, "log", "-1", "--format=%an").strip() == "memoryd"
    # memoryd's staged work is untouched, and then gets its own commit.
    assert not (root / "memory").exists()
    unit.apply_and_commit("heartbeat", {})
    assert committed(root) == ["memory/2026-03-04.md"]


def test_a_file_with_a_secret_is_left_uncommitted_and_reported(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n"})
    (root / "notes.md").write_text(f"fine line\nkey = {SECRET}\nTOKEN-abc\n")
    (root / "clean.md").write_text("nothing to see\n")

    with capture_logs() as logs:
        result = unit_for(root).commit_foreign_edits(fake_scanner)

    assert result.committed == ("clean.md",)
    assert result.withheld == (WithheldFile("notes.md", ("fake-secret", "fake-token")),)
    assert "?? notes.md" in git(root, "status", "--porcelain")
    events = [entry for entry in logs if entry["event"] == "store.foreign_edit_secret"]
    assert len(events) == 1
    assert events[0]["path"] == "notes.md"
    assert events[0]["kinds"] == ["fake-secret", "fake-token"]
    assert SECRET not in repr(logs)


def test_own_half_done_writes_are_undone_and_never_taken_for_foreign_edits(
    tmp_path: Path,
) -> None:
    root = seeded_store(
        tmp_path / "store",
        {"life/projects/p/summary.md": "# P\n", "life/projects/p/items.json": "[]\n"},
    )
    # A previous job planned these writes, recorded them, and died halfway through.
    interrupted = unit_for(root)
    interrupted.write_text("life/projects/p/items.json", '[{"id": "p-001"}]\n')
    interrupted.write_text("memory/2026-03-04.md", "half done\n")
    interrupted.move_dir("life/projects/p", "life/archives/projects/p")
    planned = interrupted.plan()
    (root / "memory").mkdir()
    (root / "memory" / "2026-03-04.md").write_text("half done\n")
    # ... and someone else edited another file meanwhile.
    (root / "MEMORY.md").write_text("# By hand\n")

    restored = undo_own_writes(store_at(root), planned)
    result = unit_for(root).commit_foreign_edits(fake_scanner)

    assert restored == ["memory/2026-03-04.md"]
    assert not (root / "memory" / "2026-03-04.md").exists()
    assert result.committed == ("MEMORY.md",)
    assert committed(root) == ["MEMORY.md"]


def test_an_own_path_with_different_content_is_left_as_a_foreign_edit(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"a.md": "a\n"})
    (root / "a.md").write_text("changed by a person after memoryd planned\n")

    assert undo_own_writes(store_at(root), [("a.md", content_digest(b"x\n"))]) == []
    result = unit_for(root).commit_foreign_edits(fake_scanner)

    assert result.committed == ("a.md",)


def test_a_planned_removal_that_happened_is_undone(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"old/a.md": "a\n"})
    (root / "old" / "a.md").unlink()

    assert undo_own_writes(store_at(root), [("old/a.md", ABSENT)]) == ["old/a.md"]

    assert (root / "old" / "a.md").read_text() == "a\n"
    assert unit_for(root).commit_foreign_edits(fake_scanner).commit is None


def test_binary_files_are_scanned_and_committed_when_clean(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n"})
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    (root / "leak.bin").write_bytes(b"\xff\xfe\x00" + SECRET.encode() + b"\x00\xff")

    result = unit_for(root).commit_foreign_edits(fake_scanner)

    assert result.committed == ("photo.png",)
    assert result.withheld == (WithheldFile("leak.bin", ("fake-secret",)),)


def test_files_over_the_scan_bound_are_withheld(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n"})
    (root / "huge.md").write_text("x" * 2000)

    result = unit_for(root).commit_foreign_edits(fake_scanner, max_bytes=1000)

    assert result.withheld == (WithheldFile("huge.md", (TOO_LARGE,)),)
    assert result.commit is None


def test_a_planted_symlink_is_set_aside_not_followed_nor_committed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(f"{SECRET}\n")
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n"})
    (root / "link.md").symlink_to(outside)

    result = unit_for(root).commit_foreign_edits(fake_scanner)

    assert result.committed == () and result.commit is None
    assert not os.path.lexists(root / "link.md")
    [aside] = (root / ".git" / "memoryd" / "set-aside").iterdir()
    assert aside.name.endswith("-link.md") and os.readlink(aside) == str(outside)
    assert outside.read_text() == f"{SECRET}\n"


def test_in_a_larger_repository_only_the_store_folder_is_considered(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "config", "user.name", "Someone")
    git(repo, "config", "user.email", "someone@else.invalid")
    (repo / "README.md").write_text("project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "--quiet", "-m", "project")
    root = seeded_store(repo / "memory-store", {"MEMORY.md": "# Tacit\n"})
    (repo / "README.md").write_text("staged change\n")
    git(repo, "add", "README.md")
    (repo / "scratch.txt").write_text(f"{SECRET}\n")
    (root / "MEMORY.md").write_text("# Tacit\n\n- by hand\n")

    result = unit_for(root).commit_foreign_edits(fake_scanner)

    assert result.committed == ("MEMORY.md",)
    assert committed(repo) == ["memory-store/MEMORY.md"]
    assert git(repo, "diff", "--cached", "--name-only").split() == ["README.md"]


def test_nothing_foreign_means_no_commit(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n"})
    before = git(root, "rev-parse", "HEAD")
    result = unit_for(root).commit_foreign_edits(fake_scanner)
    assert result.commit is None and result.committed == ()
    assert git(root, "rev-parse", "HEAD") == before


@pytest.mark.parametrize("name", [".summary.md.abc.tmp", ".items.json.q9.tmp"])
def test_memoryd_temporaries_are_never_foreign_edits(tmp_path: Path, name: str) -> None:
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n"})
    (root / name).write_text("scratch\n")
    assert unit_for(root).commit_foreign_edits(fake_scanner).committed == ()


def test_leftover_temporaries_git_lists_are_swept_and_nothing_else(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"MEMORY.md": "# Tacit\n", "life/x/a.md": "a\n"})
    leftovers = [root / ".MEMORY.md.k3j2.tmp", root / "life" / "x" / ".a.md.q9.tmp"]
    for path in leftovers:
        path.write_text("half-written\n")
    (root / "life" / "x" / "notes.tmp").write_text("a person's file\n")  # not memoryd's name
    (root / "outside").mkdir()
    (root / "outside" / "real.md").write_text("r\n")
    (root / "life" / ".link.md.z1.tmp").symlink_to(root / "outside" / "real.md")

    with capture_logs() as logs:
        result = unit_for(root).commit_foreign_edits(fake_scanner)

    assert result.swept == (".MEMORY.md.k3j2.tmp", "life/x/.a.md.q9.tmp")
    assert not any(path.exists() for path in leftovers)
    assert (root / "life" / "x" / "notes.tmp").exists()
    assert (root / "outside" / "real.md").read_text() == "r\n"
    assert "life/x/notes.tmp" in result.committed
    assert any(e["event"] == "store.temporaries_swept" and e["count"] == 2 for e in logs)
