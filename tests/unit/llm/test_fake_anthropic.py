"""The fake Anthropic server itself: scripting, routes, clean shutdown, standalone mode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.fake_anthropic import (
    Error,
    FakeAnthropicServer,
    RecordedRequest,
    Text,
    ToolUse,
    answer_from_json,
)

from memoryd.llm.anthropic_client import AnthropicClient
from memoryd.llm.base import PermanentLLMError, ToolRequest, TransientLLMError

RequestFactory = Callable[..., ToolRequest]
REPOSITORY = Path(__file__).resolve().parents[3]


def test_a_handler_computes_answers_once_the_queue_is_empty(
    make_request: RequestFactory,
) -> None:
    def echo(request: RecordedRequest) -> ToolUse:
        return ToolUse({"echo": request.body["messages"][0]["content"]})

    with (
        FakeAnthropicServer([ToolUse({"queued": True})], handler=echo) as server,
        AnthropicClient(api_key="k", base_url=server.base_url) as client,
    ):
        first = client.call_tool(make_request(user_content="one"))
        second = client.call_tool(make_request(user_content="two"))

    assert first.tool_input == {"queued": True}
    assert second.tool_input == {"echo": "two"}


def test_a_default_answer_repeats(make_request: RequestFactory) -> None:
    with (
        FakeAnthropicServer(default=Text("again")) as server,
        AnthropicClient(api_key="k", base_url=server.base_url) as client,
    ):
        results = [client.call_tool(make_request()) for _ in range(3)]

    assert [result.stop_reason for result in results] == ["end_turn"] * 3


def test_an_unscripted_call_fails_loudly(make_request: RequestFactory) -> None:
    with (
        FakeAnthropicServer() as server,
        AnthropicClient(api_key="k", base_url=server.base_url) as client,
        pytest.raises(PermanentLLMError, match="no answer was scripted"),
    ):
        client.call_tool(make_request())


def test_a_wrong_key_gets_the_real_api_401(make_request: RequestFactory) -> None:
    with (
        FakeAnthropicServer([ToolUse({})], api_key="right") as server,
        AnthropicClient(api_key="wrong", base_url=server.base_url) as client,
        pytest.raises(PermanentLLMError) as raised,
    ):
        client.call_tool(make_request())

    assert raised.value.status_code == 401
    assert raised.value.error_type == "authentication_error"


def test_unknown_routes_and_bad_bodies_are_refused_like_the_api() -> None:
    with FakeAnthropicServer([ToolUse({})]) as server:
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{server.base_url}/v1/nothing", timeout=5)  # noqa: S310 - local fake
        with missing.value:
            body = json.loads(missing.value.read())
        post = urllib.request.Request(  # noqa: S310 - a fixed http URL of the local fake
            f"{server.base_url}/v1/messages", data=b'{"model": "m"}', method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as invalid:
            urllib.request.urlopen(post, timeout=5)  # noqa: S310 - local fake
        with invalid.value:
            invalid_body = json.loads(invalid.value.read())
        pending = server.pending_answers

    assert missing.value.code == 404
    assert body["type"] == "error"
    assert body["error"]["type"] == "not_found_error"
    assert invalid.value.code == 400
    assert invalid_body["error"]["message"] == "max_tokens: Field required"
    assert pending == 1  # an invalid request consumes no scripted answer


def test_stop_wakes_a_delayed_answer_and_leaves_no_thread(make_request: RequestFactory) -> None:
    before = set(threading.enumerate())
    server = FakeAnthropicServer([ToolUse({}, delay_seconds=600)]).start()
    with (
        AnthropicClient(
            api_key="k", base_url=server.base_url, timeout_seconds=0.2, max_attempts=1
        ) as client,
        pytest.raises(TransientLLMError),
    ):
        client.call_tool(make_request())
    started = time.monotonic()

    server.stop()

    assert time.monotonic() - started < 5
    assert set(threading.enumerate()) <= before


def test_answers_have_the_json_form_of_scripts() -> None:
    assert answer_from_json({"kind": "tool_use", "input": {"a": 1}}) == ToolUse({"a": 1})
    assert answer_from_json({"kind": "text", "text": "hi", "delay_seconds": 2}) == Text(
        "hi", None, 2.0
    )
    error = answer_from_json(
        {
            "kind": "error",
            "status": 429,
            "type": "rate_limit_error",
            "headers": {"retry-after": "1"},
        }
    )
    assert error == Error(429, "rate_limit_error", headers={"retry-after": "1"})
    with pytest.raises(ValueError, match="unknown answer kind"):
        answer_from_json({"kind": "poem"})


@pytest.mark.slow
def test_standalone_server_scripted_from_a_file(
    tmp_path: Path, make_request: RequestFactory
) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "answers": [{"kind": "error", "status": 529, "type": "overloaded_error"}],
                "default": {"kind": "tool_use", "input": {"facts": ["from the script"]}},
                "usage": {"input_tokens": 7, "output_tokens": 3},
            }
        )
    )
    port_file = tmp_path / "port"
    record = tmp_path / "requests.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.fake_anthropic", "--port-file", str(port_file),
         "--script", str(script), "--record", str(record), "--api-key", "k"],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
    )  # fmt: skip
    try:
        port = _wait_for_port(port_file, process)
        waits: list[float] = []
        with AnthropicClient(
            api_key="k", base_url=f"http://127.0.0.1:{port}", sleep=waits.append
        ) as client:
            result = client.call_tool(make_request())
    finally:
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(timeout=30)

    assert exit_code == 0
    assert result.tool_input == {"facts": ["from the script"]}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (7, 3)
    assert len(waits) == 1
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["method"], r["path"]) for r in recorded] == [("POST", "/v1/messages")] * 2
    assert recorded[1]["body"]["tool_choice"]["name"] == "record_memories"


def _wait_for_port(port_file: Path, process: subprocess.Popen[bytes]) -> int:
    """Poll for the port file the server writes once it listens (readiness, not timing)."""
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if process.poll() is not None:
            raise AssertionError(f"the fake server exited early with {process.returncode}")
        if time.monotonic() > deadline:
            raise AssertionError("the fake server did not start within 30 s")
        time.sleep(0.02)
    return int(port_file.read_text())


def test_a_failing_handler_is_reported_not_swallowed(make_request: RequestFactory) -> None:
    def broken(request: RecordedRequest) -> ToolUse:
        raise KeyError("facts")

    with (
        FakeAnthropicServer(handler=broken) as server,
        AnthropicClient(api_key="k", base_url=server.base_url) as client,
    ):
        with pytest.raises(TransientLLMError, match="fake handler raised"):
            client.call_tool(make_request())
        errors = server.handler_errors

    assert len(server.requests) == 1
    assert [type(error) for error in errors] == [KeyError]


def _post_message(base_url: str, body: dict[str, object]) -> tuple[int, dict[str, str], Any]:
    post = urllib.request.Request(  # noqa: S310 - a fixed http URL of the local fake
        f"{base_url}/v1/messages", data=json.dumps(body).encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(post, timeout=5) as answer:  # noqa: S310 - local fake
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), json.loads(error.read())


@pytest.mark.parametrize("choice", [{"type": "tool", "name": "record"}, {"type": "any"}])
def test_models_that_refuse_a_forced_tool_get_the_real_api_400(choice: dict[str, str]) -> None:
    tool = {"name": "record", "input_schema": {"type": "object"}}
    body: dict[str, object] = {
        "model": "claude-mythos-5-2-20261101",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [tool],
    }
    with FakeAnthropicServer(default=ToolUse({"ok": True})) as server:
        refused = _post_message(server.base_url, {**body, "tool_choice": choice})
        auto = _post_message(server.base_url, {**body, "tool_choice": {"type": "auto"}})
        forced_elsewhere = _post_message(
            server.base_url, {**body, "model": "claude-haiku-5-5", "tool_choice": choice}
        )

    status, headers, error = refused
    assert status == 400
    assert error["type"] == "error"
    assert error["error"] == {
        "type": "invalid_request_error",
        "message": 'tool_choice type "tool" and "any" are not supported for this model',
    }
    assert headers["request-id"] == error["request_id"]
    assert auto[0] == 200
    assert auto[2]["content"][0]["name"] == "record"  # the tool it was offered
    assert forced_elsewhere[0] == 200
