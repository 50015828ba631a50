"""Long-running hygiene: 100 heartbeats in one process leave no child process or open file behind.

Each heartbeat goes through the daemon's own job (lock, state database, git store, extractor,
commit), with new transcript content each time so that every one of them commits. GitPython
leaks `git cat-file` helpers and mapped packs when a repository is held open; the store opens
one per operation, and this test is what keeps it honest. The anthropic provider is used so
that the HTTP client's connection pool is opened and closed per heartbeat too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import pytest
from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import FakeAnthropicServer, ToolUse

from memoryd.daemon.notify import Notifier
from memoryd.daemon.scheduler import Daemon, DaemonOptions
from memoryd.jobs.environment import Environment
from memoryd.settings import load_settings
from memoryd.store.layout import init_store

HEARTBEATS = 100
WARM_UP = 3


def ticking_clock() -> Callable[[], datetime]:
    """A clock one second further on each reading: run ids and commit dates stay distinct."""
    moments = (datetime(2026, 3, 10, tzinfo=UTC) + timedelta(seconds=s) for s in count())
    return lambda: next(moments)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def child_processes() -> list[int]:
    """Pids whose parent is this process, zombies included."""
    me = str(os.getpid())
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # The command name is in parentheses and may contain spaces; the ppid follows it.
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me:
            children.append(int(entry))
    return children


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    answer = ToolUse(
        {
            "facts": [
                {"entity": {"name": "Acme", "kind": "company"}, "fact": "x", "category": "status"}
            ],
            "entities": [{"name": "Acme", "kind": "company", "significant": True}],
        }
    )
    with FakeAnthropicServer(default=answer) as fake:
        yield fake


def test_a_hundred_heartbeats_leak_no_processes_and_no_files(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    init_store(tmp_path / "store", "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    config_path = tmp_path / "memoryd.toml"
    config_path.write_text(ops_config(llm=anthropic_llm(server.base_url)), encoding="utf-8")
    env = Environment(
        environ={"ANTHROPIC_API_KEY": "sk-ant-test-leaks-00000000"}, clock=ticking_clock()
    )
    daemon = Daemon(load_settings(config_path), env, Notifier({}), DaemonOptions())
    transcript = logs / "a.jsonl"

    def one_heartbeat(number: int) -> None:
        with transcript.open("a", encoding="utf-8") as handle:
            when = f"2026-03-01T09:{number % 60:02d}:00Z"
            line = {"role": "user", "content": f"fact {number}", "timestamp": when}
            handle.write(json.dumps(line) + "\n")
        daemon.heartbeat_job()
        report = daemon.last_report
        assert report is not None and report.outcome == "ok", report

    for number in range(WARM_UP):
        one_heartbeat(number)
    descriptors, children = open_descriptors(), child_processes()

    for number in range(WARM_UP, WARM_UP + HEARTBEATS):
        one_heartbeat(number)

    assert child_processes() == children == []
    assert open_descriptors() <= descriptors
    assert len(server.message_requests) == WARM_UP + HEARTBEATS
