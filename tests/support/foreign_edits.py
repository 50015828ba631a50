"""A committed store with edits made outside memoryd, and a unit of work over it with a fake
secret scanner."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.worktree._unit import UnitOfWork

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
SECRET = "SECRET-0123456789abcdef"


def fake_scanner(text: str) -> list[str]:
    """A line containing 'SECRET-' is a secret; so is 'TOKEN-' (to see several kinds)."""
    kinds = []
    if "SECRET-" in text:
        kinds.append("fake-secret")
    if "TOKEN-" in text:
        kinds.append("fake-token")
    return kinds


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def store_at(root: Path) -> GitStore:
    return GitStore(root, GitIdentity("memoryd", "memoryd@test.invalid"), lambda: NOW)


def unit_for(root: Path) -> UnitOfWork:
    return UnitOfWork(store_at(root))


def seeded_store(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".git").exists() and unit_for(root).git.work_tree_root() is None:
        git(root, "init", "--quiet", "--initial-branch=main")
    unit = unit_for(root)
    for relative, text in files.items():
        unit.write_text(relative, text)
    unit.apply_and_commit("seed", {})
    return root


def committed(root: Path, revision: str = "HEAD") -> list[str]:
    return sorted(git(root, "show", "--name-only", "--format=", revision).split())
