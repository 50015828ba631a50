"""The store end to end on a real repository: init, heartbeats, a person's edits, a crash.

The store is a folder inside a larger repository with someone else's work in progress, which
must come out of all of this exactly as it went in.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.redaction import secret_kinds
from memoryd.store.layout import init_store, open_store
from memoryd.store.tacit import add_tacit
from memoryd.worktree import UnitOfWork, undo_own_writes

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
FAKE_GITHUB_TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"
IDENTITY = GitIdentity("memoryd", "memoryd@vps.invalid")


class Clock:
    """A clock the test moves forward by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, hours: int) -> None:
        self.now += timedelta(hours=hours)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "dotfiles"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "config", "user.name", "Ops")
    git(repo, "config", "user.email", "ops@example.invalid")
    (repo / "bashrc").write_text("alias ll='ls -l'\n")
    git(repo, "add", "bashrc")
    git(repo, "commit", "--quiet", "-m", "dotfiles")
    # Work in progress that memoryd must never commit: one staged, one not, one untracked.
    (repo / "bashrc").write_text("alias ll='ls -la'\n")
    git(repo, "add", "bashrc")
    (repo / "vimrc").write_text("set nu\n")
    (repo / "notes.txt").write_text(f"{FAKE_GITHUB_TOKEN}\n")
    return repo


def test_a_store_lives_its_life_inside_a_larger_repository(repo: Path) -> None:
    clock = Clock(START)
    root = repo / "memory"
    outside_before = git(repo, "status", "--porcelain", "--", ":!memory")

    init = init_store(root, "MEMORY.md", "agents", IDENTITY.name, IDENTITY.email, clock=clock)
    store = GitStore(root, IDENTITY, clock)
    assert init.commit is not None and not init.created_repository
    assert open_store(root, store).format_version == 1

    # Heartbeat 1 files a project and a tacit line.
    clock.advance(1)
    unit = UnitOfWork(store)
    unit.write_text("life/projects/launch/summary.md", "# Launch\n\n- Ships in March\n")
    unit.write_text("life/projects/launch/items.json", '[{"id": "launch-001"}]\n')
    add_tacit(unit, "MEMORY.md", ["Prefers terse bullet summaries"])
    first = unit.apply_and_commit("Heartbeat: 1 entity, 1 tacit line", {"Memoryd-Run": "run-1"})
    assert first is not None

    # A person edits the tacit file by hand and drops a file with a token in it.
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- Written by hand\n")
    (root / "life" / "resources" / "creds.md").write_text(f"deploy: {FAKE_GITHUB_TOKEN}\n")

    # Heartbeat 2 commits the person's edit first, then archives the project.
    clock.advance(1)
    unit = UnitOfWork(store)
    foreign = unit.commit_foreign_edits(secret_kinds)
    assert foreign.committed == ("MEMORY.md",)
    assert [(w.path, w.reasons) for w in foreign.withheld] == [
        ("life/resources/creds.md", ("github",))
    ]
    unit.move_dir("life/projects/launch", "life/archives/projects/launch")
    unit.write_text(
        "life/archives/projects/launch/items.json",
        '[{"id": "launch-001"}, {"id": "launch-002"}]\n',
    )
    second = unit.apply_and_commit("Heartbeat: archive launch", {"Memoryd-Run": "run-2"})
    assert second is not None
    history = git(
        root, "log", "--follow", "--format=%s", "--", "life/archives/projects/launch/summary.md"
    )
    assert history.splitlines() == [
        "Heartbeat: archive launch",
        "Heartbeat: 1 entity, 1 tacit line",
    ]

    # Heartbeat 3 journals its plan, writes half of it, and is killed.
    clock.advance(1)
    doomed = UnitOfWork(store)
    doomed.write_text("memory/2026-03-01.md", "# 2026-03-01\n\n- 12:00 launch archived\n")
    doomed.write_text("MEMORY.md", (root / "MEMORY.md").read_text() + "- Works late\n")
    planned = doomed.plan()
    (root / "memory" / "2026-03-01.md").write_text("# 2026-03-01\n\n- 12:00 launch archived\n")

    # The next heartbeat undoes its predecessor's half-done write instead of mistaking it for
    # someone else's edit, then does the work again.
    clock.advance(1)
    assert undo_own_writes(store, planned) == ["memory/2026-03-01.md"]
    recovery = UnitOfWork(store)
    leftovers = recovery.commit_foreign_edits(secret_kinds)
    assert leftovers.commit is None
    recovery.write_text("memory/2026-03-01.md", "# 2026-03-01\n\n- 12:00 launch archived\n")
    recovery.write_text("MEMORY.md", (root / "MEMORY.md").read_text() + "- Works late\n")
    assert recovery.apply_and_commit("Heartbeat: recovered", {"Memoryd-Run": "run-3"})

    # Nothing outside the store moved; only the withheld file is left in the store.
    assert git(repo, "status", "--porcelain", "--", ":!memory") == outside_before
    assert git(repo, "diff", "--cached", "--name-only").split() == ["bashrc"]
    assert git(repo, "status", "--porcelain", "-uall", "--", "memory").splitlines() == [
        "?? memory/life/resources/creds.md"
    ]
    authors = git(repo, "log", "--format=%an <%ae>").splitlines()
    assert authors == ["memoryd <memoryd@vps.invalid>"] * 5 + ["Ops <ops@example.invalid>"]
    stamps = git(repo, "log", "--format=%ct", "-1").strip()
    assert stamps == str(int((START + timedelta(hours=4)).timestamp()))
    # A re-run of the same heartbeat commits nothing.
    again = UnitOfWork(store)
    again.write_text("memory/2026-03-01.md", "# 2026-03-01\n\n- 12:00 launch archived\n")
    assert again.apply_and_commit("Heartbeat: re-run", {}) is None
