"""`memoryd check --online` as an operator runs it, a real process against the fake server: a
heartbeat's own request on a tiny excerpt proves the key, the endpoint and that each model can
answer through the tool; a problem is reported naming the model, with the server's own words,
and exits 78; without `--online` nothing is contacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, Text, ToolUse
from tests.support.check_online import KEY, MODEL, REWRITE_MODEL, answer, run, server, write_config

from memoryd.errors import EXIT_CONFIG, EXIT_OK

pytestmark = pytest.mark.slow

__all__ = ["server"]  # the fixture, kept with the other `check --online` helpers


def test_check_without_online_contacts_nothing(tmp_path: Path, server: FakeAnthropicServer) -> None:
    write_config(tmp_path, server.base_url)
    code, out, _logs = run(tmp_path, "check", key="sk-ant-revoked")
    assert code == EXIT_OK, out
    assert server.requests == []


def test_check_online_proves_the_key_endpoint_and_both_models(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    write_config(tmp_path, server.base_url)
    code, out, logs = run(tmp_path, "check", "--online")
    assert code == EXIT_OK, out
    sent = server.message_requests
    assert [request.body["model"] for request in sent] == [MODEL, REWRITE_MODEL]
    for request in sent:  # the extraction request a heartbeat sends, on a tiny excerpt
        (tool,) = request.body["tools"]
        assert tool["name"] == "record_memories"
        assert tool["cache_control"] == {"type": "ephemeral"}
        assert request.body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert "Jane Example joined Acme Widgets" in request.body["messages"][0]["content"]
    # The choice the client makes for each: Sonnet 5.5 refuses a forced one.
    assert [request.body["tool_choice"] for request in sent] == [
        {"type": "tool", "name": "record_memories"},
        {"type": "auto"},
    ]
    assert f"online: {server.base_url} answered for llm.model {MODEL}: OK" in out
    assert f"answered for llm.rewrite_model {REWRITE_MODEL}: OK" in out
    assert "configuration OK" in out
    assert logs[-1]["online"] is True


def test_check_online_reports_a_refused_key_once_with_the_servers_words(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    write_config(tmp_path, server.base_url)
    code, out, logs = run(tmp_path, "check", "--online", key="sk-ant-revoked")
    assert code == EXIT_CONFIG
    assert len(server.message_requests) == 1  # the second model would say the same
    assert f"error: At 'llm': online: messages.create to {server.base_url} failed" in out
    assert "HTTP 401 authentication_error: invalid x-api-key" in out
    assert "put a valid key" in out
    assert "sk-ant-revoked" not in out + repr(logs)


def test_check_online_names_the_model_the_endpoint_does_not_know(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    write_config(tmp_path, server.base_url, rewrite_model="claude-retired-1")
    code, out, _logs = run(tmp_path, "check", "--online")
    assert code == EXIT_CONFIG
    assert f"answered for llm.model {MODEL}: OK" in out
    assert "error: At 'llm.rewrite_model': online:" in out
    assert "HTTP 404 not_found_error: model: claude-retired-1" in out


def test_check_online_with_the_markers_provider_has_nothing_to_contact(tmp_path: Path) -> None:
    write_config(tmp_path, "http://127.0.0.1:9")
    config = tmp_path / "memoryd.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace('"anthropic"', '"markers"'), encoding="utf-8"
    )
    code, out, _logs = run(tmp_path, "check", "--online")
    assert code == EXIT_OK, out
    assert 'llm.provider is "markers": there is no endpoint to contact' in out


def test_check_online_fails_a_model_that_answers_text_only(tmp_path: Path) -> None:
    def text_from_the_rewrite_model(request: RecordedRequest) -> Text | ToolUse:
        return Text("Jane is CTO.") if request.body["model"] == REWRITE_MODEL else answer(request)

    with FakeAnthropicServer(handler=text_from_the_rewrite_model, api_key=KEY) as fake:
        write_config(tmp_path, fake.base_url)
        code, out, _logs = run(tmp_path, "check", "--online")
        sent = [request.body["model"] for request in fake.message_requests]
        base_url = fake.base_url

    assert code == EXIT_CONFIG
    assert sent == [MODEL, REWRITE_MODEL, REWRITE_MODEL]  # asked once more, as a heartbeat does
    assert f"answered for llm.model {MODEL}: OK" in out
    assert (
        f"error: At 'llm.rewrite_model': online: {REWRITE_MODEL} at {base_url} cannot do "
        "memoryd's task" in out
    )
    assert "no record_memories call in the answer" in out
    assert "configuration OK" not in out
