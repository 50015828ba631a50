"""The Anthropic adapter over the real SDK and real HTTP, against the fake server."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
from collections.abc import Callable

import httpx2
import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import (
    Error,
    FakeAnthropicServer,
    FakeUsage,
    Text,
    ToolUse,
    credit_too_low,
    invalid_key,
    model_not_found,
    permission_denied,
    prompt_too_long,
    request_too_large,
)

from memoryd.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_TEMPFAIL, TransientError
from memoryd.llm.anthropic_client import (
    DEFAULT_BASE_URL,
    AnthropicClient,
)
from memoryd.llm.base import (
    PermanentLLMError,
    SpendLimitError,
    ToolRequest,
    TransientLLMError,
    UnusableLLMError,
)
from memoryd.llm.params import message_params
from memoryd.llm.prices import Usage
from memoryd.llm.tls import tls_context

ClientFactory = Callable[..., AnthropicClient]
RequestFactory = Callable[..., ToolRequest]
TEST_KEY = "sk-ant-test-0000000000000000"


def test_forced_tool_call_returns_the_tool_input(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(ToolUse({"facts": ["Jane is CTO of Acme"]}))

    result = make_client().call_tool(make_request())

    assert result.tool_input == {"facts": ["Jane is CTO of Acme"]}
    assert result.stop_reason == "tool_use"
    assert result.model == "claude-haiku-5-5"
    assert result.request_id is not None
    assert result.request_id.startswith("req_fake_")
    (sent,) = fake_server.message_requests
    assert sent.body["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert [tool["name"] for tool in sent.body["tools"]] == ["record_memories"]
    assert sent.body["tools"][0]["input_schema"]["required"] == ["facts"]
    assert sent.body["messages"] == [
        {"role": "user", "content": "<transcript>Jane joined Acme as CTO.</transcript>"}
    ]
    assert sent.body["max_tokens"] == 1024
    assert sent.headers["x-stainless-retry-count"] == "0"


def test_the_stable_prefix_is_marked_for_caching(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(ToolUse({"facts": []}))

    make_client().call_tool(make_request())

    (sent,) = fake_server.message_requests
    ephemeral = {"type": "ephemeral"}
    assert sent.body["system"] == [
        {
            "type": "text",
            "text": "You extract durable facts from a transcript.",
            "cache_control": ephemeral,
        }
    ]
    assert sent.body["tools"][0]["cache_control"] == ephemeral
    # The variable part must stay out of the cached prefix.
    assert "cache_control" not in str(sent.body["messages"])


def test_caching_can_be_turned_off_and_an_empty_system_prompt_is_left_out(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(ToolUse({"facts": []}))

    make_client().call_tool(make_request(cache_prefix=False, system=""))

    (sent,) = fake_server.message_requests
    assert "system" not in sent.body
    assert "cache_control" not in sent.body["tools"][0]


def test_usage_is_reported_with_cache_counts(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(
        ToolUse({"facts": []}, usage=FakeUsage(1200, 85, 4096, 0)),
        ToolUse({"facts": []}, usage=FakeUsage(1200, 40, 0, 4096)),
    )
    client = make_client()

    first = client.call_tool(make_request())
    second = client.call_tool(make_request())

    assert first.usage == Usage(1200, 85, 4096, 0)
    assert second.usage == Usage(1200, 40, 0, 4096)


def test_an_answer_without_the_tool_call_gives_no_tool_input(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(Text("Nothing worth keeping here."), ToolUse({"x": 1}, tool_name="other"))
    client = make_client()

    text_only = client.call_tool(make_request())
    wrong_tool = client.call_tool(make_request())

    assert text_only.tool_input is None
    assert text_only.stop_reason == "end_turn"
    assert wrong_tool.tool_input is None
    assert len(fake_server.message_requests) == 2


def test_a_storm_of_429_529_500_is_retried_honouring_retry_after(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    waits: list[float],
) -> None:
    fake_server.enqueue(
        Error(429, "rate_limit_error", headers={"retry-after": "7"}),
        Error(529, "overloaded_error", headers={"retry-after-ms": "1500"}),
        Error(500, "api_error"),
        ToolUse({"facts": ["ok"]}),
    )

    with capture_logs() as events:
        result = make_client(max_attempts=4).call_tool(make_request())

    assert result.tool_input == {"facts": ["ok"]}
    assert len(fake_server.message_requests) == 4
    assert waits[:2] == [7.0, 1.5]
    # No hint on the 500: the third wait is jittered backoff, 1 s doubled twice, half-jittered.
    assert 2.0 <= waits[2] <= 4.0
    retries = [event for event in events if event["event"] == "llm.retry"]
    assert [(e["attempt"], e["status"]) for e in retries] == [(1, 429), (2, 529), (3, 500)]
    assert [e["wait_seconds"] for e in retries][:2] == [7.0, 1.5]
    assert all(e["request_id"].startswith("req_fake_") for e in retries)
    assert not [event for event in events if event["event"] == "llm.failed"]


def test_a_long_retry_after_is_capped(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    waits: list[float],
) -> None:
    fake_server.enqueue(
        Error(429, "rate_limit_error", headers={"retry-after": "86400"}),
        ToolUse({"facts": []}),
    )

    make_client(max_wait_seconds=60.0).call_tool(make_request())

    assert waits == [60.0]


def test_backoff_grows_and_stays_under_the_cap(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    waits: list[float],
) -> None:
    fake_server.enqueue(*[Error(503, "api_error")] * 6, ToolUse({"facts": []}))

    make_client(max_attempts=7, max_wait_seconds=10.0).call_tool(make_request())

    ceilings = [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert len(waits) == 6
    for wait, ceiling in zip(waits, ceilings, strict=True):
        assert ceiling / 2 <= wait <= ceiling


def test_a_storm_that_outlasts_the_attempts_is_a_transient_error(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(*[Error(529, "overloaded_error", "Overloaded")] * 3)

    with capture_logs() as events, pytest.raises(TransientLLMError) as raised:
        make_client(max_attempts=3).call_tool(make_request())

    assert len(fake_server.message_requests) == 3
    assert raised.value.status_code == 529
    assert raised.value.exit_code == EXIT_TEMPFAIL
    assert isinstance(raised.value, TransientError)
    assert "overloaded_error: Overloaded" in str(raised.value)
    (failed,) = [event for event in events if event["event"] == "llm.failed"]
    assert failed["attempts"] == 3
    assert failed["status"] == 529
    assert failed["transient"] is True
    assert len([event for event in events if event["event"] == "llm.retry"]) == 2


@pytest.mark.parametrize(
    "refusal",
    [
        Error(400, "invalid_request_error", "refused"),
        prompt_too_long(),
        Error(422, "invalid_request_error", "refused"),
    ],
    ids=lambda error: f"{error.status}-{error.message[:10]}",
)
def test_permanent_errors_are_not_retried(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    waits: list[float],
    refusal: Error,
) -> None:
    fake_server.enqueue(refusal, ToolUse({"facts": []}))

    with capture_logs() as events, pytest.raises(PermanentLLMError) as raised:
        make_client().call_tool(make_request())

    assert len(fake_server.message_requests) == 1
    assert waits == []
    assert raised.value.status_code == refusal.status
    assert raised.value.error_type == refusal.type
    assert raised.value.exit_code == EXIT_FAILED
    assert not isinstance(raised.value, TransientError)
    assert not isinstance(raised.value, UnusableLLMError)  # about this request only
    assert [event["event"] for event in events] == ["llm.failed"]


@pytest.mark.parametrize(
    "case",
    [
        (invalid_key(), "authentication", "llm.api_key_file"),
        (permission_denied(), "permission", "permissions"),
        (model_not_found("claude-haiku-5-5"), "model_not_found", "llm.model"),
        (credit_too_low(), "billing", "credits"),
        (request_too_large(), "request_too_large", "lower llm.chunk_tokens"),
    ],
    ids=lambda case: case[1],
)
def test_account_key_model_and_endpoint_errors_are_unusable_with_what_to_fix(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    waits: list[float],
    case: tuple[Error, str, str],
) -> None:
    refusal, kind, remedy = case
    fake_server.enqueue(refusal, ToolUse({"facts": []}))

    with capture_logs() as events, pytest.raises(UnusableLLMError) as raised:
        make_client().call_tool(make_request())

    error = raised.value
    assert len(fake_server.message_requests) == 1  # never retried
    assert waits == []
    assert isinstance(error, PermanentLLMError)
    assert error.exit_code == EXIT_CONFIG
    assert (error.kind, error.status_code, error.error_type) == (kind, refusal.status, refusal.type)
    assert error.api_message == refusal.message  # the server's own words
    assert error.endpoint == fake_server.base_url
    assert error.model == "claude-haiku-5-5"
    assert error.request_id is not None and error.request_id.startswith("req_")
    assert remedy in error.remedy
    for part in (fake_server.base_url, refusal.message, error.request_id, error.remedy):
        assert part in str(error)
    (failed,) = [event for event in events if event["event"] == "llm.failed"]
    assert (failed["unusable"], failed["endpoint"]) == (kind, fake_server.base_url)
    assert error.problem() == {
        "kind": kind,
        "remedy": error.remedy,
        "endpoint": fake_server.base_url,
        "model": "claude-haiku-5-5",
        "status": refusal.status,
        "error_type": refusal.type,
        "message": refusal.message,
        "request_id": error.request_id,
    }


def test_a_404_for_one_batch_is_not_about_the_model(
    fake_server: FakeAnthropicServer, make_client: ClientFactory
) -> None:
    with pytest.raises(PermanentLLMError) as raised:
        make_client().batch_status("msgbatch_gone")

    assert raised.value.status_code == 404
    assert not isinstance(raised.value, UnusableLLMError)
    assert fake_server.base_url in str(raised.value)


def test_a_model_the_server_does_not_know_gets_the_real_404(
    make_request: RequestFactory,
) -> None:
    with (
        FakeAnthropicServer([ToolUse({"facts": []})], models={"claude-haiku-5-5"}) as server,
        AnthropicClient(api_key=TEST_KEY, base_url=server.base_url) as client,
    ):
        with pytest.raises(UnusableLLMError) as raised:
            client.call_tool(make_request(model="claude-retired-1"))
        assert raised.value.api_message == "model: claude-retired-1"
        assert client.call_tool(make_request()).tool_input == {"facts": []}


@pytest.mark.parametrize(
    "refusal",
    [
        Error(429, "rate_limit_error", error_code="enforced_spend_limit_reached"),
        Error(429, "rate_limit_error", error_code="contract_spend_limit_reached"),
        Error(402, "billing_error", error_code="linked_organization_spend_limit_reached"),
    ],
    ids=lambda error: str(error.error_code),
)
def test_spend_limits_are_not_retried_and_stop_the_run_for_now(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    refusal: Error,
) -> None:
    fake_server.enqueue(refusal, ToolUse({"facts": []}))

    with pytest.raises(SpendLimitError) as raised:
        make_client().call_tool(make_request())

    assert len(fake_server.message_requests) == 1
    assert raised.value.error_code == refusal.error_code
    assert raised.value.exit_code == EXIT_TEMPFAIL


def test_x_should_retry_overrides_the_status(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(
        Error(400, "invalid_request_error", headers={"x-should-retry": "true"}),
        ToolUse({"facts": ["second try"]}),
        Error(500, "api_error", headers={"x-should-retry": "false"}),
        ToolUse({"facts": []}),
    )
    client = make_client()

    assert client.call_tool(make_request()).tool_input == {"facts": ["second try"]}
    with pytest.raises(TransientLLMError):
        client.call_tool(make_request())

    assert len(fake_server.message_requests) == 3


def test_timeouts_are_retried_then_succeed(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(
        ToolUse({"facts": []}, delay_seconds=30),
        ToolUse({"facts": []}, delay_seconds=30),
        ToolUse({"facts": ["in time"]}),
    )

    with capture_logs() as events:
        result = make_client(timeout_seconds=0.3).call_tool(make_request())

    assert result.tool_input == {"facts": ["in time"]}
    assert len(fake_server.message_requests) == 3
    retries = [event for event in events if event["event"] == "llm.retry"]
    assert [event["error"] for event in retries] == ["APITimeoutError"] * 2
    assert all(event["status"] is None for event in retries)


def test_timeouts_that_never_end_are_a_transient_error(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(*[ToolUse({"facts": []}, delay_seconds=30)] * 2)

    with pytest.raises(TransientLLMError, match="timed out"):
        make_client(timeout_seconds=0.3, max_attempts=2).call_tool(make_request())

    assert len(fake_server.message_requests) == 2


def test_an_unreachable_endpoint_is_a_transient_error(make_request: RequestFactory) -> None:
    # A port that was just free and has nobody listening: connections are refused at once.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits: list[float] = []
    with (
        AnthropicClient(
            api_key=TEST_KEY,
            base_url=f"http://127.0.0.1:{port}",
            max_attempts=3,
            sleep=waits.append,
        ) as client,
        pytest.raises(TransientLLMError) as raised,
    ):
        client.call_tool(make_request())

    assert len(waits) == 2
    # The operator learns where memoryd tried to go, not only that it could not.
    assert f"to http://127.0.0.1:{port} failed" in str(raised.value)
    assert raised.value.endpoint == f"http://127.0.0.1:{port}"


def test_the_key_and_endpoint_passed_win_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, make_request: RequestFactory
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-environment")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    with FakeAnthropicServer([ToolUse({"facts": []})], api_key=TEST_KEY) as server:
        with AnthropicClient(api_key=TEST_KEY, base_url=server.base_url) as client:
            result = client.call_tool(make_request())
        with AnthropicClient(api_key=TEST_KEY) as default_client:
            default_url = default_client.base_url

        (sent,) = server.message_requests
    assert result.tool_input == {"facts": []}
    assert sent.api_key == TEST_KEY
    assert "from-the-environment" not in str(sent.headers)
    assert default_url.rstrip("/") == DEFAULT_BASE_URL


def test_errors_and_logs_never_carry_the_key_or_the_content(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    fake_server.enqueue(Error(503, "api_error"), Error(401, "authentication_error", "bad key"))
    request = make_request(user_content="SECRET-TRANSCRIPT-TEXT", system="SECRET-PROMPT")

    with capture_logs() as events, pytest.raises(PermanentLLMError) as raised:
        make_client().call_tool(request)

    everything = str(raised.value) + repr(events)
    for secret in (TEST_KEY, "SECRET-TRANSCRIPT-TEXT", "SECRET-PROMPT"):
        assert secret not in everything
    assert [event["event"] for event in events] == ["llm.retry", "llm.failed"]


def test_a_missing_api_key_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(PermanentLLMError, match="no API key"):
        AnthropicClient(api_key="")


def test_which_statuses_are_retried(
    fake_server: FakeAnthropicServer, make_client: ClientFactory, make_request: RequestFactory
) -> None:
    client = make_client(max_attempts=2)
    retried: dict[int, bool] = {}
    for status in (400, 401, 403, 404, 405, 408, 409, 412, 413, 422, 429, 431, 499, 500, 501,
                   502, 503, 504, 529, 599):  # fmt: skip
        fake_server.enqueue(Error(status, "api_error"), ToolUse({"facts": []}))
        before = len(fake_server.message_requests)
        with contextlib.suppress(PermanentLLMError):
            client.call_tool(make_request())
        retried[status] = len(fake_server.message_requests) - before == 2
        if fake_server.pending_answers:  # not retried: use up the success left in the queue
            client.call_tool(make_request())

    assert {status for status, again in retried.items() if again} == {
        408, 409, 429, 500, 501, 502, 503, 504, 529, 599
    }  # fmt: skip


def test_the_same_request_gives_the_same_bytes(make_request: RequestFactory) -> None:
    request = make_request()

    first = json.dumps(message_params(request), sort_keys=True)
    second = json.dumps(message_params(request), sort_keys=True)
    sent = message_params(request)
    sent["tools"][0]["input_schema"]["properties"]["facts"]["mutated"] = True

    assert first == second
    assert "mutated" not in request.tool.input_schema["properties"]["facts"]


def test_every_client_of_the_process_shares_one_tls_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loading the trusted roots costs 30-40 ms: the daemon's heartbeats do it once, not once
    per client (`tls_context`)."""
    made: list[ssl.SSLContext] = []
    real = httpx2.create_ssl_context

    def counting() -> ssl.SSLContext:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(httpx2, "create_ssl_context", counting)
    tls_context.cache_clear()
    try:
        clients = [AnthropicClient(api_key="sk-ant-test", base_url=DEFAULT_BASE_URL) for _ in "ab"]
        # The SDK's HTTP client keeps the context in its connection pool (httpx2/httpcore2).
        pools = [client._sdk._client._transport._pool for client in clients]  # type: ignore[attr-defined]
        assert len(made) == 1
        assert all(pool._ssl_context is made[0] for pool in pools)
        assert made[0].verify_mode == ssl.CERT_REQUIRED and made[0].check_hostname
        for client in clients:
            client.close()
    finally:
        tls_context.cache_clear()
