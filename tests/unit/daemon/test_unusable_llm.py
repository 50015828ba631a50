"""The daemon while the LLM is unusable: it never exits, each heartbeat stops at its first call,
systemd's STATUS says what to fix, and `llm.unusable` is logged again at most once an hour (the
clock is passed in; nothing sleeps)."""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.check_online import answer

from memoryd.daemon.notify import Notifier
from memoryd.daemon.scheduler import Daemon, DaemonOptions, StopPolicy
from memoryd.jobs.environment import Environment
from memoryd.settings import load_settings
from memoryd.store.layout import init_store

KEY = "sk-ant-test-daemon-000000000000"


class RecordingNotifier(Notifier):
    """A notifier that keeps the STATUS lines instead of sending them to systemd."""

    def __init__(self) -> None:
        super().__init__({})
        self.statuses: list[str] = []

    def status(self, text: str) -> bool:
        self.statuses.append(text)
        return True


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(handler=answer, api_key="sk-ant-the-key-was-rotated") as fake:
        yield fake


def make_daemon(root: Path, server: FakeAnthropicServer, clock: Clock) -> Daemon:
    (root / "logs").mkdir()
    (root / "logs" / "a.jsonl").write_text(
        json.dumps({"role": "user", "content": "Jane", "timestamp": "2026-03-01T09:00:00Z"}) + "\n",
        encoding="utf-8",
    )
    init_store(root / "store", "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    config = root / "memoryd.toml"
    config.write_text(ops_config(llm=anthropic_llm(server.base_url)), encoding="utf-8")
    env = Environment(environ={"ANTHROPIC_API_KEY": KEY}, clock=clock)
    options = DaemonOptions(stop=StopPolicy(grace_seconds=0.5, deadline_seconds=10))
    return Daemon(load_settings(config), env, RecordingNotifier(), options)


def events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


def test_the_daemon_keeps_going_says_what_to_fix_and_relogs_once_an_hour(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    clock = Clock()
    daemon = make_daemon(tmp_path, server, clock)
    notifier = daemon.notifier
    assert isinstance(notifier, RecordingNotifier)
    logged: list[int] = []
    for _half_hour in range(5):
        before = len(server.message_requests)
        with capture_logs() as logs:
            daemon.heartbeat_job()
        assert len(server.message_requests) - before == 1  # stops at its first call
        assert events(logs, "job.failed") == []
        assert daemon.last_report is not None
        assert daemon.last_report.outcome == "unusable"
        assert notifier.statuses[-1].startswith(
            f"LLM UNUSABLE (authentication, HTTP 401 {server.base_url}, model claude-haiku-5-5)"
        )
        assert "put a valid key" in notifier.statuses[-1]
        logged.append(len(events(logs, "llm.unusable")))
        clock.now += timedelta(minutes=30)
    assert logged == [1, 0, 1, 0, 1]

    server.api_key = KEY  # the operator rotates the key memoryd reads
    with capture_logs() as logs:
        daemon.heartbeat_job()
    assert daemon.last_report is not None
    assert daemon.last_report.outcome == "ok"
    assert notifier.statuses[-1].startswith(
        "last heartbeat 2026-03-10 14:30Z ok: +1 fact, 1 entity; 1 chunk sent"
    )
    (recovered,) = events(logs, "llm.recovered")
    assert (recovered["kind"], recovered["since"]) == (
        "authentication",
        "2026-03-10T12:00:00+00:00",
    )
