"""Message Batches through the adapter: submit, poll, results, and refusals before sending."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tests.fakes.fake_anthropic import Error, FakeAnthropicServer, FakeUsage, Text, ToolUse

from memoryd.llm.anthropic_client import AnthropicClient
from memoryd.llm.base import (
    BatchClient,
    BatchItemFailure,
    BatchNotEndedError,
    InvalidBatchError,
    LLMClient,
    ToolRequest,
    ToolResult,
    ToolSpec,
    TransientLLMError,
)
from memoryd.llm.prices import Usage

ClientFactory = Callable[..., AnthropicClient]
RequestFactory = Callable[..., ToolRequest]
VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
SMALL_REQUEST = ToolRequest(
    "claude-haiku-5-5", "s", ToolSpec("t", "d", {"type": "object", "properties": {}}), "u", 10
)


def test_submit_poll_and_results_round_trip(
    make_client: ClientFactory, make_request: RequestFactory, waits: list[float]
) -> None:
    with FakeAnthropicServer(batch_polls_before_end=2) as server:
        server.enqueue(
            ToolUse({"facts": ["a"]}, usage=FakeUsage(10, 5, 0, 0)),
            Text("no tool"),
            Error(400, "invalid_request_error", "too long"),
        )
        client = make_client(base_url=server.base_url)

        batch_id = client.submit_batch(
            [
                ("summary-jane-doe", make_request(user_content="one")),
                ("summary-acme", make_request(user_content="two")),
                ("summary-launch", make_request(user_content="three")),
            ]
        )
        statuses = [client.batch_status(batch_id) for _ in range(3)]
        results = client.batch_results(batch_id)

        (created,) = [r for r in server.requests if r.path == "/v1/messages/batches"]

    assert statuses == ["in_progress", "in_progress", "ended"]
    assert list(results) == ["summary-acme", "summary-jane-doe", "summary-launch"]
    assert results["summary-jane-doe"] == ToolResult(
        tool_input={"facts": ["a"]},
        stop_reason="tool_use",
        usage=Usage(10, 5, 0, 0),
        model="claude-haiku-5-5",
        request_id=None,
    )
    acme = results["summary-acme"]
    assert isinstance(acme, ToolResult)
    assert acme.tool_input is None
    assert results["summary-launch"] == BatchItemFailure(
        "errored", "invalid_request_error: too long"
    )
    items = created.body["requests"]
    assert [item["custom_id"] for item in items] == [
        "summary-jane-doe",
        "summary-acme",
        "summary-launch",
    ]
    assert items[0]["params"]["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert items[0]["params"]["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert items[2]["params"]["messages"][0]["content"] == "three"
    assert waits == []


def test_results_of_an_unfinished_batch_are_refused(
    make_client: ClientFactory, make_request: RequestFactory
) -> None:
    with FakeAnthropicServer([ToolUse({"facts": []})], batch_polls_before_end=5) as server:
        client = make_client(base_url=server.base_url)
        batch_id = client.submit_batch([("only", make_request())])

        with pytest.raises(BatchNotEndedError, match="in_progress"):
            client.batch_results(batch_id)

        assert not [r for r in server.requests if r.path.endswith("/results")]


def test_batch_endpoints_share_the_retry_policy(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    waits: list[float],
) -> None:
    fake_server.enqueue(ToolUse({"facts": []}))
    fake_server.fail_next(Error(529, "overloaded_error", headers={"retry-after": "3"}))
    client = make_client()

    batch_id = client.submit_batch([("only", make_request())])

    assert waits == [3.0]
    assert client.batch_status(batch_id) == "ended"
    creates = [r for r in fake_server.requests if r.path == "/v1/messages/batches"]
    assert len(creates) == 2


@pytest.mark.parametrize(
    "custom_ids",
    [[], [""], ["x" * 65], ["has space"], ["slash/no"], ["dot.no"], ["ok", "ok"]],
    ids=["empty", "blank", "too-long", "space", "slash", "dot", "duplicate"],
)
def test_invalid_custom_ids_are_refused_before_any_request(
    fake_server: FakeAnthropicServer,
    make_client: ClientFactory,
    make_request: RequestFactory,
    custom_ids: list[str],
) -> None:
    with pytest.raises(InvalidBatchError):
        make_client().submit_batch([(custom_id, make_request()) for custom_id in custom_ids])

    assert fake_server.requests == []


@pytest.fixture(scope="module")
def unreachable_client() -> Iterator[AnthropicClient]:
    """A client pointed at a closed port, allowed one attempt: sending anything would fail
    with a connection error, never with InvalidBatchError."""
    with AnthropicClient(api_key="k", base_url="http://127.0.0.1:9", max_attempts=1) as client:
        yield client


@pytest.fixture(scope="module")
def shared_server_client() -> Iterator[AnthropicClient]:
    with (
        FakeAnthropicServer(default=ToolUse({})) as server,
        AnthropicClient(api_key="k", base_url=server.base_url, max_attempts=1) as client,
    ):
        yield client


@given(st.text().filter(lambda text: not VALID_ID.fullmatch(text)))
@example("0\n")  # a "$" would match before the newline
def test_any_id_outside_the_rule_is_refused_without_sending(
    unreachable_client: AnthropicClient, custom_id: str
) -> None:
    with pytest.raises(InvalidBatchError):
        unreachable_client.submit_batch([(custom_id, SMALL_REQUEST)])


@given(st.from_regex(VALID_ID, fullmatch=True))
def test_any_id_inside_the_rule_is_sent(
    shared_server_client: AnthropicClient, custom_id: str
) -> None:
    batch_id = shared_server_client.submit_batch([(custom_id, SMALL_REQUEST)])
    assert list(shared_server_client.batch_results(batch_id)) == [custom_id]


def test_a_results_download_cut_halfway_is_retried(
    make_client: ClientFactory, make_request: RequestFactory, waits: list[float]
) -> None:
    with FakeAnthropicServer(default=ToolUse({"facts": []}), cut_results_streams=1) as server:
        client = make_client(base_url=server.base_url)
        batch_id = client.submit_batch([(f"item-{n}", make_request()) for n in range(20)])

        results = client.batch_results(batch_id)

        downloads = [r for r in server.requests if r.path.endswith("/results")]
    assert len(downloads) == 2
    assert len(waits) == 1
    assert sorted(results) == sorted(f"item-{n}" for n in range(20))


def test_a_results_download_that_keeps_breaking_is_a_transient_error(
    make_client: ClientFactory, make_request: RequestFactory
) -> None:
    with FakeAnthropicServer(default=ToolUse({"facts": []}), cut_results_streams=9) as server:
        client = make_client(base_url=server.base_url, max_attempts=2)
        batch_id = client.submit_batch([(f"item-{n}", make_request()) for n in range(20)])

        with pytest.raises(TransientLLMError):
            client.batch_results(batch_id)


def test_the_adapter_is_the_interfaces(make_client: ClientFactory) -> None:
    # Checked by mypy as much as by pytest: the rewrite depends on the protocols only.
    batches: BatchClient = make_client()
    calls: LLMClient = make_client()
    assert callable(batches.submit_batch)
    assert callable(calls.call_tool)
