"""`memoryd check --online` as an operator runs it, a real process against the fake server: one
one-token request each proves the key, the endpoint and the models, a problem is reported with
the server's own words and exits 78, and without `--online` nothing is contacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.check_online import MODEL, REWRITE_MODEL, run, server, write_config

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
    assert all(request.body["max_tokens"] == 1 and "tools" not in request.body for request in sent)
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
