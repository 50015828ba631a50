"""`index.commands`: run in the store after a commit; failures logged, never blocking."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from structlog.testing import capture_logs

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.jobs.hooks import after_commit, run_index_commands, run_init_commands
from memoryd.jobs.index_state import reading_status
from memoryd.settings import Settings, parse_settings


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


def _settings(tmp_path: Path, commands: list[str], init: list[str] | None = None) -> Settings:
    return parse_settings(
        {
            "store": {"path": str(tmp_path / "store")},
            "index": {"commands": commands, "init_commands": init or [], "timeout_seconds": 5},
        }
    )


def test_failing_index_commands_back_off_and_a_success_resets(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    git = GitStore(store, GitIdentity("memoryd", "memoryd@localhost"), None)
    state = tmp_path / "state"
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    failing = _settings(tmp_path, ["sh -c 'echo x >> runs; exit 1'"])

    def runs() -> int:
        return len((store / "runs").read_text().splitlines())

    with capture_logs() as logs:
        for _ in range(3):
            after_commit(failing, git, committed=True, state_dir=state, now=now)
        assert runs() == 3
        after_commit(failing, git, committed=True, state_dir=state, now=now + timedelta(minutes=4))
        assert runs() == 3  # backing off: not run
        after_commit(failing, git, committed=True, state_dir=state, now=now + timedelta(minutes=6))
        assert runs() == 4  # tried again after 5 minutes, failed: now 10 minutes
        later = now + timedelta(minutes=15)
        after_commit(failing, git, committed=True, state_dir=state, now=later)
        assert runs() == 4
    assert [e["until"] for e in logs if e["event"] == "index.backoff"][:2] == [
        (now + timedelta(minutes=5)).isoformat(),
        (now + timedelta(minutes=5)).isoformat(),
    ]
    fixed = _settings(tmp_path, ["sh -c 'echo x >> runs'"])
    after_commit(fixed, git, committed=True, state_dir=state, now=now + timedelta(minutes=17))
    assert runs() == 5
    assert json.loads((state / "index-backoff.json").read_text()) == {"failures": 0}
    after_commit(fixed, git, committed=False, state_dir=state, now=now + timedelta(minutes=18))
    assert runs() == 5  # nothing committed: nothing to index


def test_init_commands_run_once_and_again_when_they_change(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    state = tmp_path / "state"
    first = _settings(tmp_path, [], init=["sh -c 'echo a >> setup'"])
    assert run_init_commands(first, store, state) == 1
    assert run_init_commands(first, store, state) is None
    changed = _settings(tmp_path, [], init=["sh -c 'echo b >> setup'"])
    assert run_init_commands(changed, store, state) == 1
    assert (store / "setup").read_text().split() == ["a", "b"]
    failing = _settings(tmp_path, [], init=["false"])
    assert run_init_commands(failing, store, state) == 0
    assert run_init_commands(failing, store, state) == 0  # tried again until it works
    assert run_init_commands(_settings(tmp_path, []), store, state) is None


def test_status_shows_the_failing_index_commands_and_the_queued_reads(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert reading_status(state) == {
        "index_failures": 0,
        "index_paused_until": None,
        "reads_queued": 0,
    }
    (state / "queue").mkdir(parents=True)
    (state / "queue" / "reads.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    (state / "index-backoff.json").write_text('{"failures": 4, "until": "2026-03-10T12:10:00"}')
    assert reading_status(state) == {
        "index_failures": 4,
        "index_paused_until": "2026-03-10T12:10:00",
        "reads_queued": 2,
    }
