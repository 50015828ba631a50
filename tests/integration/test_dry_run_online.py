"""`heartbeat --dry-run --online`: the requests a heartbeat would send, counted by the
endpoint's own tokenizer (`messages/count_tokens` on the fake server), with memoryd's estimate
standing, and saying so, when the endpoint cannot count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.anthropic_wire import count_input_tokens
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.cli import memoryd, write_config
from tests.support.harness import TEST_KEY, Workspace, turn

from memoryd.errors import EXIT_OK, EXIT_USAGE
from memoryd.jobs.environment import Environment
from memoryd.jobs.heartbeat import dry_run_heartbeat

COUNT_PATH = "/v1/messages/count_tokens"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    workspace.write_log(
        "a.jsonl",
        [
            turn("user", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z"),
            turn("user", "remember: company Acme: Renewed for 2027", "2026-03-02T09:00:00Z"),
        ],
    )
    return workspace


def dry_run(ws: Workspace, server: FakeAnthropicServer, model: str) -> dict[str, object]:
    settings = ws.settings(llm={"model": model, "base_url": server.base_url})
    env = Environment(environ={"ANTHROPIC_API_KEY": TEST_KEY}, clock=lambda: ws.now)
    return dry_run_heartbeat(settings, env, online=True)


@pytest.mark.parametrize(
    ("model", "choice"), [("claude-haiku-5-5", "tool"), ("claude-sonnet-5-5", "auto")]
)
def test_the_endpoint_counts_each_request_a_heartbeat_would_send(
    ws: Workspace, model: str, choice: str
) -> None:
    with FakeAnthropicServer() as server:  # no answer scripted: an extraction would fail loudly
        report = dry_run(ws, server, model)
        counted = [r for r in server.requests if r.path == COUNT_PATH]
        extractions = server.message_requests

    assert extractions == []
    assert len(counted) == report["estimated_calls"] == 2
    for request in counted:
        assert request.body["tools"][0]["name"] == "record_memories"
        assert request.body["tool_choice"]["type"] == choice  # what the heartbeat would send
        assert "max_tokens" not in request.body
        assert "<<<MEMORYD-" in request.body["messages"][0]["content"]
    assert report["token_count"] == "count_tokens"
    assert report["counted_input_tokens"] == sum(count_input_tokens(r.body) for r in counted)
    assert isinstance(report["counted_cost_usd"], float)
    assert "estimated_input_tokens" in report  # the offline estimate is still given


def test_an_endpoint_without_count_tokens_leaves_the_estimate_with_a_note(ws: Workspace) -> None:
    with FakeAnthropicServer(count_tokens_available=False) as server:
        report = dry_run(ws, server, "claude-haiku-5-5")
        asked = [r.path for r in server.requests]

    assert asked == [COUNT_PATH]  # one refusal is enough: the estimate stands for all
    assert report["token_count"] == "estimate"
    note = str(report["token_count_note"])
    assert "could not count tokens" in note and "HTTP 404" in note
    assert "counted_input_tokens" not in report
    assert (
        isinstance(report["estimated_input_tokens"], int) and report["estimated_input_tokens"] > 0
    )


def test_online_goes_with_dry_run_only(tmp_path: Path) -> None:
    write_config(tmp_path)
    assert memoryd("init", cwd=tmp_path).returncode == EXIT_OK
    alone = memoryd("heartbeat", "--online", cwd=tmp_path)
    assert alone.returncode == EXIT_USAGE
    assert "--online goes with --dry-run" in alone.stderr
    markers = memoryd("heartbeat", "--dry-run", "--online", cwd=tmp_path)
    assert markers.returncode == EXIT_OK
    assert "nothing would be sent to count" in json.loads(markers.stdout)["token_count_note"]
