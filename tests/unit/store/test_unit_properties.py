"""Property: whatever writes and moves are staged, the disk after applying is what the unit showed.

And applying the same final content again changes nothing and commits nothing.
"""

from __future__ import annotations

import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.errors import StoreError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.worktree import UnitOfWork

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
FOLDERS = ["p", "q", "r/s", "r/t"]
NAMES = ["a.md", "b.md"]
SEEDED = {"p/a.md": "seed pa\n", "r/s/b.md": "seed rsb\n", "top.md": "seed top\n"}

writes = st.tuples(
    st.just("write"),
    st.sampled_from([*[f"{f}/{n}" for f in FOLDERS for n in NAMES], "top.md"]),
    st.sampled_from(["one\n", "two\n", "seed pa\n", "ünïcode ✓\n"]),
)
moves = st.tuples(st.just("move"), st.sampled_from(FOLDERS), st.sampled_from(FOLDERS))
operations = st.lists(st.one_of(writes, moves), max_size=8)


def unit_for(root: Path) -> UnitOfWork:
    return UnitOfWork(GitStore(root, GitIdentity("memoryd", "m@test.invalid"), lambda: NOW))


def snapshot(unit: UnitOfWork, folder: str = "") -> dict[str, str | None]:
    """Every file the unit shows, with its text."""
    files: dict[str, str | None] = {}
    for name in unit.list_dir(folder):
        child = f"{folder}/{name}" if folder else name
        if unit.list_dir(child):
            files.update(snapshot(unit, child))
        else:
            files[child] = unit.read_text(child)
    return files


def head(root: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout


@settings(max_examples=40, deadline=None)
@given(operations)
def test_disk_after_apply_equals_the_staged_view(steps: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        subprocess.run(["git", "init", "-q", "--initial-branch=main"], cwd=root, check=True)
        seed = unit_for(root)
        for relative, text in SEEDED.items():
            seed.write_text(relative, text)
        seed.apply_and_commit("seed", {})

        unit = unit_for(root)
        for kind, first, second in steps:
            if kind == "write":
                unit.write_text(first, second)
            else:
                try:
                    unit.move_dir(first, second)
                except StoreError:
                    continue  # a move the current view does not allow: refused, nothing staged
        expected = snapshot(unit)
        unit.apply_and_commit("apply", {})

        assert snapshot(unit_for(root)) == expected
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
        )
        assert status.stdout == ""

        before = head(root)
        again = unit_for(root)
        for relative, content in expected.items():
            assert content is not None
            again.write_text(relative, content)
        assert again.plan() == []
        assert again.apply_and_commit("again", {}) is None
        assert head(root) == before
