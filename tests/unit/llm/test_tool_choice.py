"""The tool choice each model gets, over the real SDK and the fake server: forced where the
model accepts it, automatic and strict where it is known or learnt to refuse a forced one."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, ToolUse, forced_tool_refused

from memoryd.llm.anthropic_client import AnthropicClient
from memoryd.llm.base import ToolChoiceRefusedError, ToolRequest, UnusableLLMError
from memoryd.llm.params import message_params, strict_schema
from memoryd.llm.tool_choice import ToolChoices, known_to_refuse_forced_tool

RequestFactory = Callable[..., ToolRequest]
KEY = "sk-ant-test-0000000000000000"


@pytest.mark.parametrize(
    ("model", "refuses"),
    [
        ("claude-sonnet-5-5", True),
        ("claude-opus-5-5-20261101", True),
        ("claude-fable-5-1", True),
        ("claude-fable-5-2", True),
        ("claude-mythos-5-1", True),
        ("claude-mythos-5-2", True),
        ("claude-haiku-5-5", False),
        ("claude-sonnet-5", False),
        ("claude-opus-5", False),
        ("claude-haiku-4-5", False),
    ],
)
def test_the_known_table_matches_model_families_by_prefix(model: str, refuses: bool) -> None:
    assert known_to_refuse_forced_tool(model) is refuses
    assert ToolChoices().forces(model) is not refuses


def test_an_automatic_request_is_strict_and_asks_for_the_tool(
    make_request: RequestFactory,
) -> None:
    request = make_request()
    forced = message_params(request)
    auto = message_params(request, forced=False)

    assert forced["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert "strict" not in forced["tools"][0]
    assert auto["tool_choice"] == {"type": "auto"}
    assert auto["tools"][0]["strict"] is True
    assert auto["tools"][0]["cache_control"] == {"type": "ephemeral"}
    (system,) = auto["system"]
    assert system["text"].startswith(request.system)
    assert "Answer only by calling the record_memories tool" in system["text"]
    assert system["cache_control"] == {"type": "ephemeral"}
    assert {k: v for k, v in auto.items() if k not in ("tools", "tool_choice", "system")} == {
        k: v for k, v in forced.items() if k not in ("tools", "tool_choice", "system")
    }


def test_a_known_model_is_asked_with_auto_at_once(make_request: RequestFactory) -> None:
    with (
        FakeAnthropicServer(default=ToolUse({"facts": ["x"]})) as server,
        AnthropicClient(api_key=KEY, base_url=server.base_url, tool_choices=ToolChoices()) as c,
    ):
        result = c.call_tool(make_request(model="claude-sonnet-5-5"))
        sent = server.message_requests

    assert result.tool_input == {"facts": ["x"]}
    assert len(sent) == 1
    assert sent[0].body["tool_choice"] == {"type": "auto"}
    assert sent[0].body["tools"][0]["strict"] is True


def test_a_model_that_accepts_a_forced_choice_keeps_it(make_request: RequestFactory) -> None:
    with (
        FakeAnthropicServer(default=ToolUse({"facts": []})) as server,
        AnthropicClient(api_key=KEY, base_url=server.base_url, tool_choices=ToolChoices()) as c,
    ):
        c.call_tool(make_request(model="claude-haiku-5-5"))
        sent = server.message_requests

    assert [r.body["tool_choice"]["type"] for r in sent] == ["tool"]


def test_an_unknown_model_refusing_a_forced_choice_is_learnt_for_the_process(
    make_request: RequestFactory,
) -> None:
    choices = ToolChoices()
    model = "claude-novel-6"
    with (
        FakeAnthropicServer(default=ToolUse({"facts": []}), refusing_forced_tool={model}) as server,
        capture_logs() as events,
    ):
        with AnthropicClient(api_key=KEY, base_url=server.base_url, tool_choices=choices) as c:
            first = c.call_tool(make_request(model=model))
        # A new client of the same process (the next heartbeat) starts with auto.
        with AnthropicClient(api_key=KEY, base_url=server.base_url, tool_choices=choices) as c:
            second = c.call_tool(make_request(model=model))
        sent = server.message_requests

    assert first.tool_input == second.tool_input == {"facts": []}
    assert [r.body["tool_choice"]["type"] for r in sent] == ["tool", "auto", "auto"]
    assert sent[0].body["messages"] == sent[1].body["messages"]  # the same request, resent
    assert not choices.forces(model)
    (learnt,) = [e for e in events if e["event"] == "llm.tool_choice_auto"]
    assert learnt["model"] == model
    assert learnt["request_id"] is not None
    assert 'tool_choice type "tool"' in learnt["api_message"]


def test_a_model_refusing_even_auto_is_unusable_not_a_chunk_failure(
    make_request: RequestFactory,
) -> None:
    with (
        FakeAnthropicServer(default=forced_tool_refused()) as server,
        AnthropicClient(api_key=KEY, base_url=server.base_url, tool_choices=ToolChoices()) as c,
        pytest.raises(ToolChoiceRefusedError) as raised,
    ):
        c.call_tool(make_request(model="claude-stubborn-1"))

    assert isinstance(raised.value, UnusableLLMError)
    assert raised.value.kind == "tool_choice"
    assert raised.value.model == "claude-stubborn-1"
    assert "choose another model" in str(raised.value)
    assert len(server.message_requests) == 2  # forced, then auto; no retry of either


def test_a_strict_schema_leaves_out_what_strict_decoding_does_not_take() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^a"},
            "tips": {
                "type": "array",
                "minItems": 1,
                "maxItems": 5,
                "items": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 2}}},
            },
            "many": {"type": "array", "minItems": 3, "items": {"type": "string"}},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    original = json.dumps(schema, sort_keys=True)

    assert strict_schema(schema) == {
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},  # a property's name is not a keyword
            "tips": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "additionalProperties": False,  # every object closed
                },
            },
            "many": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    assert json.dumps(schema, sort_keys=True) == original  # the caller's schema is untouched
