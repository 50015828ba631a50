"""`git.push` and `index.commands` around real heartbeats, with a local bare remote."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.support.harness import Workspace, turn

from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.settings import Settings


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=b", "-c", "user.email=b@b", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "a")
    workspace.init()
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    git(workspace.store, "remote", "add", "origin", str(remote))
    git(workspace.store, "push", "--quiet", "origin", "main")
    return workspace


def pushing(ws: Workspace, *commands: str) -> Settings:
    return ws.settings(
        "markers", git={"push": True, "remote": "origin"}, index={"commands": list(commands)}
    )


def remember(ws: Workspace, name: str, text: str, when: str) -> None:
    ws.write_log(name, [turn("user", f"remember: person {text}", when)], append=True)


def test_memory_from_elsewhere_is_pulled_in_and_ours_pushed_on_top(
    ws: Workspace, tmp_path: Path
) -> None:
    other = tmp_path / "b"
    git(tmp_path, "clone", "--quiet", str(tmp_path / "remote.git"), str(other))
    (other / "MEMORY.md").write_text("# Tacit\n\n- Written on machine B\n", encoding="utf-8")
    git(other, "commit", "--quiet", "-am", "tacit from machine B")
    git(other, "push", "--quiet", "origin", "main")

    remember(ws, "a.jsonl", "Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z")
    index_log = tmp_path / "index.log"
    settings = pushing(ws, f"sh -c 'echo indexed >> {index_log}'")
    report = run_heartbeat(settings, ws.environment())

    assert report.outcome == "ok"
    assert "Written on machine B" in ws.read("MEMORY.md")
    remote_log = git(tmp_path / "remote.git", "log", "--format=%s", "main").splitlines()
    assert remote_log[1] == "tacit from machine B"
    assert remote_log[0].startswith("heartbeat: +1 fact")
    assert git(tmp_path / "remote.git", "rev-parse", "main").strip() == report.commit
    assert index_log.read_text() == "indexed\n"

    nothing = run_heartbeat(settings, ws.environment())
    assert nothing.outcome == "nothing-new"
    assert index_log.read_text() == "indexed\n"  # no commit, no index run


def test_an_unreachable_remote_keeps_the_local_commit_and_is_retried_next_time(
    ws: Workspace, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    hidden = tmp_path / "remote-away.git"
    remote.rename(hidden)
    remember(ws, "a.jsonl", "Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z")
    settings = pushing(ws, "false")

    with capture_logs() as logs:
        report = run_heartbeat(settings, ws.environment())
    events = [e["event"] for e in logs]
    assert report.outcome == "ok"
    assert report.commit is not None
    assert ws.git("rev-parse", "HEAD").strip() == report.commit
    assert {"git.pull_failed", "git.push_failed", "index.failed"} <= set(events)

    hidden.rename(remote)
    with capture_logs() as logs:
        again = run_heartbeat(settings, ws.environment())
    assert again.outcome == "nothing-new"
    assert "git.pushed" in [e["event"] for e in logs]
    assert git(remote, "rev-parse", "main").strip() == report.commit


def test_the_daemons_rewrite_job_commits_records_success_and_pushes(
    ws: Workspace, tmp_path: Path
) -> None:
    from memoryd.daemon.notify import Notifier
    from memoryd.daemon.scheduler import Daemon
    from memoryd.settings import LoadedConfig

    remember(ws, "a.jsonl", "Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z")
    settings = pushing(ws)
    daemon = Daemon(
        LoadedConfig(tmp_path / "memoryd.toml", settings), ws.environment(), Notifier({})
    )
    daemon.heartbeat_job()
    assert daemon.rewrite_overdue()  # never rewritten: the daemon would catch up at start

    # The heartbeat already rendered the template summary; weeks later the fact is cold, so the
    # rewrite (the template again, with the markers provider) has a change to commit.
    ws.now += timedelta(days=25)
    with capture_logs() as logs:
        daemon.rewrite_job()
    finished = next(e for e in logs if e["event"] == "rewrite.finished")
    assert finished["outcome"] == "ok"
    assert finished["commit"] is not None
    assert "git.pushed" in [e["event"] for e in logs]
    assert git(tmp_path / "remote.git", "rev-parse", "main").strip() == finished["commit"]
    assert not daemon.rewrite_overdue()
