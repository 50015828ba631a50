"""`index.commands`: run in the store after a commit; failures logged, never blocking."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from memoryd.jobs.hooks import run_index_commands


def test_commands_run_in_the_store_in_order(tmp_path: Path) -> None:
    commands = ["touch first", "sh -c 'ls > listing'"]
    assert run_index_commands(commands, tmp_path, timeout_seconds=30) == 2
    assert (tmp_path / "listing").read_text().split() == ["first", "listing"]


def test_a_failure_is_logged_and_the_next_command_still_runs(tmp_path: Path) -> None:
    commands = [
        "sh -c 'echo broken index >&2; exit 3'",
        "no-such-memoryd-index-tool --update",
        "unbalanced 'quote",
        "touch after",
    ]
    with capture_logs() as logs:
        assert run_index_commands(commands, tmp_path, timeout_seconds=30) == 1
    failures = [e for e in logs if e["event"] == "index.failed"]
    assert [f["command"] for f in failures] == commands[:3]
    assert failures[0]["reason"] == "exit status 3"
    assert failures[0]["stderr"] == "broken index"
    assert (tmp_path / "after").exists()


def test_a_command_past_its_timeout_is_killed_and_logged(tmp_path: Path) -> None:
    with capture_logs() as logs:
        assert run_index_commands(["sleep 30"], tmp_path, timeout_seconds=0.2) == 0
    assert logs[-1]["event"] == "index.failed"
    assert "timed out" in logs[-1]["reason"]
