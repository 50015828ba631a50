"""The client interface's value types, error families and the token estimate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_TEMPFAIL, MemorydError, TransientError
from memoryd.llm.base import (
    LLMError,
    PermanentLLMError,
    SpendLimitError,
    ToolRequest,
    ToolSpec,
    TransientLLMError,
    UnusableKind,
    UnusableLLMError,
    estimate_tokens,
    remedy_for,
)

OBJECT_SCHEMA = {"type": "object", "properties": {}}


def test_error_families_map_to_the_exit_codes() -> None:
    assert issubclass(LLMError, MemorydError)
    assert TransientLLMError("x").exit_code == EXIT_TEMPFAIL
    assert isinstance(TransientLLMError("x"), TransientError)
    assert SpendLimitError("x").exit_code == EXIT_TEMPFAIL
    assert isinstance(SpendLimitError("x"), TransientLLMError)
    assert PermanentLLMError("x").exit_code == EXIT_FAILED
    assert not isinstance(PermanentLLMError("x"), TransientError)


def test_errors_keep_what_the_api_said() -> None:
    error = PermanentLLMError(
        "refused", status_code=401, error_type="authentication_error", request_id="req_1"
    )
    assert (error.status_code, error.error_type, error.request_id) == (
        401,
        "authentication_error",
        "req_1",
    )
    assert error.error_code is None


@pytest.mark.parametrize(
    "name", ["", "has space", "x" * 65, "dots.not.allowed", "ü", "record_memories\n"]
)
def test_tool_names_outside_the_api_rule_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="tool name"):
        ToolSpec(name, "d", OBJECT_SCHEMA)


def test_a_tool_schema_must_be_an_object() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        ToolSpec("record_memories", "d", {"type": "array"})


def test_a_request_needs_a_model_and_room_to_answer() -> None:
    tool = ToolSpec("t", "d", OBJECT_SCHEMA)
    with pytest.raises(ValueError, match="max_tokens"):
        ToolRequest("claude-haiku-5-5", "s", tool, "u", 0)
    with pytest.raises(ValueError, match="model"):
        ToolRequest("", "s", tool, "u", 10)


def test_estimate_tokens_on_known_texts() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd" * 100) == 100
    # Dense scripts count a token per character.
    assert estimate_tokens("日本語") == 3


@given(st.text(), st.text())
def test_estimate_tokens_is_roughly_additive(first: str, second: str) -> None:
    whole = estimate_tokens(first + second)
    assert max(estimate_tokens(first), estimate_tokens(second)) <= whole
    # Splitting a text can round up at most once per part.
    assert whole <= estimate_tokens(first) + estimate_tokens(second)


@given(st.text(min_size=1))
def test_estimate_tokens_is_positive_and_bounded_by_length(text: str) -> None:
    assert 1 <= estimate_tokens(text) <= len(text)


@pytest.mark.parametrize(
    "kind",
    [
        "authentication",
        "permission",
        "model_not_found",
        "billing",
        "request_too_large",
        "invalid_answers",
    ],
)
def test_an_unusable_llm_is_permanent_exits_78_and_says_what_to_fix(kind: UnusableKind) -> None:
    error = UnusableLLMError(
        kind,
        "messages.create to https://api.example failed: HTTP 401 authentication_error",
        model="claude-haiku-5-5",
        api_message="invalid x-api-key",
        endpoint="https://api.example",
        status_code=401,
        error_type="authentication_error",
        request_id="req_1",
    )
    assert isinstance(error, PermanentLLMError)
    assert not isinstance(error, TransientError)
    assert error.exit_code == EXIT_CONFIG
    assert error.remedy == remedy_for(kind, "claude-haiku-5-5")
    assert str(error).endswith("; " + error.remedy)
    assert "{model}" not in error.remedy
    assert error.problem()["kind"] == kind
    assert error.problem()["message"] == "invalid x-api-key"


def test_the_remedies_name_the_setting_to_change() -> None:
    assert "llm.chunk_tokens" in remedy_for("request_too_large", None)
    assert "claude-x" in remedy_for("model_not_found", "claude-x")
    assert "llm.model" in remedy_for("invalid_answers", "claude-x")
    assert "credit" in remedy_for("billing", None)


def test_invalid_answers_in_a_row_name_the_model_the_endpoint_and_the_last_reason() -> None:
    error = UnusableLLMError.invalid_answers(
        model="local-7b", endpoint="http://127.0.0.1:11434", count=3, reason="facts: missing"
    )
    assert error.kind == "invalid_answers"
    assert str(error).startswith(
        "3 chunks in a row got an invalid answer from local-7b at http://127.0.0.1:11434"
    )
    assert error.problem() == {
        "kind": "invalid_answers",
        "remedy": remedy_for("invalid_answers", "local-7b"),
        "endpoint": "http://127.0.0.1:11434",
        "model": "local-7b",
        "status": None,
        "error_type": None,
        "message": "facts: missing",
        "request_id": None,
    }
