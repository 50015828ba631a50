"""Sync health: a push failing job after job is an error, in `status`, the exit code and STATUS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.multihost import Host, git, model

from memoryd.daemon.schedule import status_line
from memoryd.daemon.status import collect_status, render_status
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.settings import Settings


def limited(host: Host, limit: int) -> Settings:
    settings = host.settings()
    return settings.model_copy(
        update={"git": settings.git.model_copy(update={"push_failure_limit": limit})}
    )


def sync_status(host: Host, settings: Settings) -> dict[str, Any]:
    report = collect_status(settings, host.ws.environment())
    assert report["sync"] is not None
    return report


def test_a_push_failing_job_after_job_is_an_error_until_it_succeeds(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "--quiet", "-b", "main", str(remote))
    with FakeAnthropicServer(handler=model) as server:
        host = Host("a", tmp_path / "a", remote, server.base_url)
        host.ws.init()
        git(host.ws.store, "remote", "add", "origin", str(remote))
        git(host.ws.store, "push", "--quiet", "origin", "main")
        settings = limited(host, 2)
        host.remember("2026-03-01", "person Jane Doe: Joined Acme as CTO")
        assert run_heartbeat(settings, host.environment()).exit_code == 0
        assert sync_status(host, settings)["sync"]["ahead"] == 0

        host.offline(True)
        host.remember("2026-03-02", "person Jane Doe: Lives in Berlin")
        with capture_logs() as logs:
            first = run_heartbeat(settings, host.environment())
        assert first.exit_code == 0  # one failure: retried next job, not an error yet
        assert "git.push_failing" not in [e["event"] for e in logs]
        report = sync_status(host, settings)["sync"]
        assert report["push_failures"] == 1 and not report["failing"]
        assert report["ahead"] == 1  # the heartbeat's commit is not on the remote

        for _ in range(2):  # from the limit on: an error at every job
            with capture_logs() as logs:
                again = run_heartbeat(settings, host.environment())
            failing = [e for e in logs if e["event"] == "git.push_failing"]
            assert len(failing) == 1 and failing[0]["log_level"] == "error"
            assert again.exit_code == 1
            assert again.sync_problem is not None
            assert status_line(again, host.ws.now).startswith("SYNC FAILING")
        full = sync_status(host, settings)
        assert full["sync"]["failing"] and full["sync"]["push_failures"] == 3
        assert "SYNC FAILING" in render_status(full)

        host.offline(False)
        healed = run_heartbeat(settings, host.environment())
        assert healed.exit_code == 0 and healed.sync_problem is None
        report = sync_status(host, settings)["sync"]
        assert report["push_failures"] == 0 and not report["failing"]
        assert report["ahead"] == 0 and report["behind"] == 0
        assert report["last_push"] is not None and report["last_pull"] is not None
        assert "SYNC FAILING" not in render_status(sync_status(host, settings))
