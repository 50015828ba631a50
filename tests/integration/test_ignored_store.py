"""`memoryd init` and `memoryd heartbeat` on a store folder its enclosing repository ignores:
refused with exit 78 and a message naming the store and the rule, nothing committed there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.errors import EXIT_CONFIG, EXIT_OK

pytestmark = pytest.mark.slow

CONFIG = """
[store]
path = "store"
[state]
path = "state"
[llm]
provider = "markers"
[backfill]
since = "all"
[[agents]]
name = "ops"
  [[agents.sources]]
  format = "jsonl"
  path = "logs"
"""


def run(cwd: Path, *command: str) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    return subprocess.run(
        command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=120, check=False
    )


def memoryd(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(cwd, sys.executable, "-m", "memoryd", *args)


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(cwd, "git", *args)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An operator's repository with memoryd's config at its root and a store folder in it."""
    assert git(tmp_path, "init", "--quiet", "--initial-branch=main").returncode == 0
    (tmp_path / "memoryd.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "logs").mkdir()
    return tmp_path


def refusal(project: Path) -> str:
    store, gitignore = project.resolve() / "store", project.resolve() / ".gitignore"
    return (
        f"refusing to use the store at {store}: the enclosing git repository {project.resolve()} "
        f"ignores it (rule 'store/' at {gitignore}:1)"
    )


def test_init_refuses_an_ignored_store_with_exit_78(project: Path) -> None:
    (project / ".gitignore").write_text("store/\n")

    result = memoryd(project, "init")

    assert result.returncode == EXIT_CONFIG, result.stderr
    assert f"memoryd init: {refusal(project)}" in result.stderr
    assert not (project / "store").exists()
    assert git(project, "rev-parse", "--verify", "--quiet", "HEAD").returncode != 0


def test_a_heartbeat_refuses_a_store_that_became_ignored_before_reading(project: Path) -> None:
    assert memoryd(project, "init").returncode == EXIT_OK
    head = git(project, "rev-parse", "HEAD").stdout
    (project / ".gitignore").write_text("store/\n")
    turn = {
        "role": "user",
        "content": "tacit: Prefers mornings",
        "timestamp": "2026-03-01T09:00:00Z",
    }
    (project / "logs" / "a.jsonl").write_text(json.dumps(turn) + "\n", encoding="utf-8")

    result = memoryd(project, "heartbeat")

    assert result.returncode == EXIT_CONFIG, result.stderr
    assert refusal(project) in result.stderr
    assert git(project, "rev-parse", "HEAD").stdout == head
    assert "Prefers mornings" not in (project / "store" / "MEMORY.md").read_text(encoding="utf-8")


def test_check_and_a_dry_run_report_a_store_that_became_ignored(project: Path) -> None:
    assert memoryd(project, "init").returncode == EXIT_OK
    assert memoryd(project, "check").returncode == EXIT_OK
    (project / ".gitignore").write_text("store/\n")

    check = memoryd(project, "check")
    dry_run = memoryd(project, "heartbeat", "--dry-run")

    assert check.returncode == EXIT_CONFIG, check.stdout + check.stderr
    assert f"error: At 'store.path': {refusal(project)}" in check.stdout
    assert dry_run.returncode == EXIT_CONFIG, dry_run.stderr
    assert refusal(project) in dry_run.stderr
