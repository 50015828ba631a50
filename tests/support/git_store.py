"""A real git repository in a temporary folder and a `GitStore` over it, at a fixed time."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from memoryd.gitrepo._repository import GitIdentity, GitStore

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
IDENTITY = GitIdentity("memoryd test", "memoryd@test.invalid")


def git(cwd: Path, *args: str) -> str:
    """Run the git CLI directly, as a person working in the repository would."""
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "config", "user.name", "Someone Else")
    git(path, "config", "user.email", "someone@else.invalid")
    return path


def store_at(path: Path) -> GitStore:
    return GitStore(path, IDENTITY, lambda: NOW, lock_timeout_seconds=0.2, lock_poll_seconds=0.05)
