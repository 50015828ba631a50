"""Spend control through the daemon's wiring, with an injected clock and the fake API.

The daily ceiling stops LLM work with cursors untouched, `budget.exhausted` is logged once per
UTC day, and the next UTC day carries on where it stopped. The per-heartbeat ceiling spreads a
backfill over several heartbeats.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, FakeUsage, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

from memoryd.errors import EXIT_OK, EXIT_TEMPFAIL
from memoryd.jobs.environment import Environment, open_state
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.settings import Settings

KEY = "sk-ant-test-budget-000000000000"
# At input 1 USD and output 5 USD per million tokens, each answer costs exactly 0.01 USD, while
# the budget's estimate of a small chunk is about 0.007 USD: a ceiling of 0.015 USD lets one call
# through and stops before the second.
ANSWER_USAGE = FakeUsage(input_tokens=5000, output_tokens=1000)
_REMEMBER = re.compile(r"remember: (\w+) ([^:\n]+): ([^\n]+)")


def model(request: RecordedRequest) -> ToolUse:
    content = request.body["messages"][0]["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    facts, entities = [], []
    for kind, name, fact in _REMEMBER.findall(text):
        facts.append({"entity": {"name": name, "kind": kind}, "fact": fact, "category": "status"})
        entities.append({"name": name, "kind": kind, "significant": True})
    return ToolUse({"facts": facts, "entities": entities}, usage=ANSWER_USAGE)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(handler=model) as fake:
        yield fake


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    workspace.write_log(
        "a.jsonl",
        [turn("user", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z")],
    )
    workspace.write_log(
        "b.jsonl",
        [turn("user", "remember: person Bob Roe: Moved to Lisbon", "2026-03-02T09:00:00Z")],
    )
    return workspace


def settings(ws: Workspace, server: FakeAnthropicServer, **budget: float) -> Settings:
    return ws.settings(
        "anthropic",
        llm={
            "base_url": server.base_url,
            "max_attempts": 1,
            # One call at a time: the ceilings below are sized on what each answer really cost
            # (a call in flight counts at its estimate until it is answered).
            "concurrency": 1,
            "prices": {"claude-haiku-5-5": {"input": 1.0, "output": 5.0}},
        },
        budget={"daily_usd": 0, "heartbeat_usd": 0, **budget},
    )


def environment(ws: Workspace) -> Environment:
    return Environment(environ={"ANTHROPIC_API_KEY": KEY}, clock=lambda: ws.now)


def b_cursor(ws: Workspace, config: Settings) -> str | None:
    with open_state(config, environment(ws)) as state:
        return next(
            (record.cursor_json for record in state.cursors.all() if "b.jsonl" in record.file_path),
            None,
        )


def test_the_daily_ceiling_stops_once_logs_once_and_the_next_day_resumes(
    ws: Workspace, server: FakeAnthropicServer
) -> None:
    config = settings(ws, server, daily_usd=0.015)
    ws.now = ws.now.replace(hour=23, minute=0)

    with capture_logs() as logs:
        first = run_heartbeat(config, environment(ws))
    assert first.outcome == "stopped"
    assert first.stop_reason == "budget"
    assert first.exit_code == EXIT_TEMPFAIL
    assert first.counters.facts_added == 1  # Jane's chunk was within the budget
    assert not first.more_waiting  # the day's budget: the daemon does not go on at once
    assert len(server.message_requests) == 1
    assert [e["event"] for e in logs].count("budget.exhausted") == 1
    assert b_cursor(ws, config) is None  # the held file will be read again from the start

    ws.now += timedelta(minutes=30)  # still the same UTC day
    with capture_logs() as logs:
        again = run_heartbeat(config, environment(ws))
    assert again.outcome == "stopped"
    assert len(server.message_requests) == 1  # no call made
    assert "budget.exhausted" not in [e["event"] for e in logs]  # logged once a day

    ws.now += timedelta(hours=1)  # 00:30 UTC the next day
    with capture_logs() as logs:
        resumed = run_heartbeat(config, environment(ws))
    assert resumed.outcome == "ok"
    assert resumed.exit_code == EXIT_OK
    assert resumed.counters.facts_added == 1
    assert len(server.message_requests) == 2
    assert "budget.exhausted" not in [e["event"] for e in logs]
    assert "Moved to Lisbon" in ws.read("life/areas/people/bob-roe/items.json")
    assert b_cursor(ws, config) is not None


def test_the_heartbeat_ceiling_spreads_a_backfill_over_heartbeats(
    ws: Workspace, server: FakeAnthropicServer
) -> None:
    config = settings(ws, server, heartbeat_usd=0.015)
    first = run_heartbeat(config, environment(ws))
    assert (first.outcome, first.counters.facts_added) == ("stopped", 1)
    assert first.more_waiting  # only this heartbeat's share: the daemon goes on at once
    second = run_heartbeat(config, environment(ws))  # same day: only the per-run ceiling binds
    assert (second.outcome, second.counters.facts_added) == ("ok", 1)
    assert not second.more_waiting
    assert len(server.message_requests) == 2
    third = run_heartbeat(config, environment(ws))
    assert (third.outcome, third.chunks) == ("nothing-new", 0)
