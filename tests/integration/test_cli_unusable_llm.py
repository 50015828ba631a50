"""A heartbeat meeting a run-level LLM error as an operator meets it: a real `memoryd` process
against the fake server exits 78 and says what to fix, `status` shows it until the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer, credit_too_low
from tests.support.check_online import run, server, write_config
from tests.support.cli import memoryd

from memoryd.errors import EXIT_CONFIG, EXIT_OK

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the fixture, shared with the `check --online` tests


def test_a_heartbeat_without_credit_exits_78_and_status_says_what_to_fix(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    write_config(tmp_path, server.base_url)
    assert memoryd("init", cwd=tmp_path).returncode == EXIT_OK
    server.fail_next(credit_too_low(), credit_too_low())
    for attempt in range(2):
        code, out, logs = run(tmp_path, "heartbeat")
        assert code == EXIT_CONFIG
        assert out.startswith("heartbeat unusable:")
        finished = next(line for line in logs if line["event"] == "heartbeat.finished")
        assert str(finished["stop_reason"]).startswith("llm unusable (billing): ")
        unusable = [line for line in logs if line["event"] == "llm.unusable"]
        if attempt == 0:  # the next one, seconds later, is within the hour
            (line,) = unusable
            assert (line["level"], line["endpoint"], line["status"]) == (
                "error",
                server.base_url,
                400,
            )
            assert str(line["message"]).startswith("Your credit balance is too low")
        else:
            assert unusable == []
    assert len(server.message_requests) == 2  # one request each
    code, out, _logs = run(tmp_path, "status", "--json")
    problem = json.loads(out)["llm_unusable"]
    assert (problem["kind"], problem["status"], problem["endpoint"]) == (
        "billing",
        400,
        server.base_url,
    )
    assert problem["message"].startswith("Your credit balance is too low")
    code, out, _logs = run(tmp_path, "status")
    assert "LLM UNUSABLE" in out and "credit" in out

    code, out, logs = run(tmp_path, "heartbeat")
    assert code == EXIT_OK, out
    assert "llm.recovered" in [line["event"] for line in logs]
    code, out, _logs = run(tmp_path, "status", "--json")
    assert json.loads(out)["llm_unusable"] is None
