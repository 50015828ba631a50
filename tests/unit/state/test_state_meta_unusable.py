"""The recorded run-level LLM problem: when it is logged again, what keeps it, what clears it."""

from __future__ import annotations

from typing import Any

from tests.unit.state.conftest import at

from memoryd.state import State
from memoryd.state.meta import (
    UNUSABLE_LLM_KEY,
    clear_unusable_llm,
    note_unusable_llm,
    streak_checked_since,
    unusable_llm,
)


def problem(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": "authentication",
        "remedy": "put a valid key in llm.api_key_file",
        "endpoint": "https://api.anthropic.com",
        "model": "claude-haiku-5-5",
        "status": 401,
        "error_type": "authentication_error",
        "message": "invalid x-api-key",
        "request_id": "req_1",
    }
    return {**base, **changes}


def test_a_lasting_problem_is_logged_at_most_once_an_hour_and_keeps_its_start(
    state: State,
) -> None:
    due = [
        note_unusable_llm(state.meta, problem(request_id=f"req_{m}"), at(m)) for m in (0, 30, 59)
    ]
    assert due == [True, False, False]
    assert note_unusable_llm(state.meta, problem(), at(60)) is True
    assert note_unusable_llm(state.meta, problem(), at(90)) is False
    record = unusable_llm(state.meta)
    assert record is not None
    assert record["since"] == at(0).isoformat()
    assert record["logged_at"] == at(60).isoformat()
    assert record["last_seen"] == at(90).isoformat()
    assert record["request_id"] == "req_1"  # the latest occurrence's


def test_a_different_problem_is_logged_at_once_and_starts_anew(state: State) -> None:
    note_unusable_llm(state.meta, problem(), at(0))
    assert note_unusable_llm(state.meta, problem(kind="billing", status=400), at(5)) is True
    assert note_unusable_llm(state.meta, problem(kind="billing", status=400), at(6)) is False
    assert note_unusable_llm(
        state.meta, problem(kind="billing", status=400, message="other words"), at(7)
    )
    record = unusable_llm(state.meta)
    assert record is not None and record["since"] == at(7).isoformat()


def test_invalid_answers_are_one_problem_whatever_the_validation_errors_say(
    state: State,
) -> None:
    invalid = problem(kind="invalid_answers", status=None, error_type=None, message="a: missing")
    assert note_unusable_llm(state.meta, invalid, at(0), streak_checked=True)
    assert not note_unusable_llm(state.meta, {**invalid, "message": "b: wrong type"}, at(10))
    checked = streak_checked_since(
        state.meta, model="claude-haiku-5-5", endpoint="https://api.anthropic.com"
    )
    assert checked == at(0)  # a single confirmation keeps the streak's time
    elsewhere = streak_checked_since(
        state.meta, model="other", endpoint="https://api.anthropic.com"
    )
    assert elsewhere is None
    assert streak_checked_since(state.meta, model="claude-haiku-5-5", endpoint="http://x") is None


def test_any_answer_clears_a_problem_with_the_key_or_the_account(state: State) -> None:
    note_unusable_llm(state.meta, problem(), at(0))
    cleared = clear_unusable_llm(state.meta, model="another-model", valid_answer=False)
    assert cleared is not None and cleared["kind"] == "authentication"
    assert state.meta.get(UNUSABLE_LLM_KEY) is None
    assert clear_unusable_llm(state.meta, model="claude-haiku-5-5", valid_answer=True) is None


def test_a_problem_with_one_model_is_cleared_only_by_that_model(state: State) -> None:
    note_unusable_llm(state.meta, problem(kind="model_not_found", status=404), at(0))
    assert clear_unusable_llm(state.meta, model="claude-sonnet-5-5", valid_answer=True) is None
    assert clear_unusable_llm(state.meta, model="claude-haiku-5-5", valid_answer=False)


def test_only_a_valid_answer_clears_invalid_answers(state: State) -> None:
    note_unusable_llm(state.meta, problem(kind="invalid_answers", status=None), at(0))
    assert clear_unusable_llm(state.meta, model="claude-haiku-5-5", valid_answer=False) is None
    assert clear_unusable_llm(state.meta, model="claude-haiku-5-5", valid_answer=True)
    assert unusable_llm(state.meta) is None
