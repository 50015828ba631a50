"""What the catalogue cache and snapshot tests share: a small committed store and a unit of work
that records which files were read from it."""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime
from pathlib import Path

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.catalog import EntityCatalog
from memoryd.worktree import UnitOfWork

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
TODAY = date(2026, 3, 4)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=P", "-c", "user.email=p@x.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


class CountingUnit(UnitOfWork):
    """A unit of work that records which files were read from it."""

    def __init__(self, git_store: GitStore) -> None:
        super().__init__(git_store)
        self.read: list[str] = []

    def read_text(self, relative: str) -> str | None:
        self.read.append(relative)
        return super().read_text(relative)


def unit(root: Path) -> CountingUnit:
    return CountingUnit(GitStore(root, GitIdentity("memoryd", "m@x.invalid"), lambda: NOW))


def seeded_store(tmp_path: Path) -> Path:
    """A store with three entities (one archived), committed."""
    root = tmp_path / "store"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    tx = unit(root)
    catalog = EntityCatalog.load(tx)
    catalog.create("Jane Doe", "person", ["JD"], today=TODAY)
    catalog.create("Acme", "company", today=TODAY)
    archived = catalog.create("Old Project", "project", today=TODAY)
    catalog.set_status(archived, "completed")
    tx.apply_and_commit("seed", {})
    return root
