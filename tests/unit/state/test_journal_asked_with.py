"""The journal keeps what each answer was asked with (schema version 9), and an answer asked again
replaces the first only when the caller says so."""

from __future__ import annotations

import pytest

from memoryd.llm.prices import Usage
from memoryd.state import JournalStateError, State

from .conftest import at

PLAN = '{"file": "/t/a.jsonl", "range": [0, 4096], "digest": "d1"}'
FIRST = '{"facts": [], "tacit": ["Prefers terse summaries"]}'
SECOND = '{"facts": [], "tacit": ["Prefers long summaries"]}'
USAGE = Usage(input_tokens=1200, output_tokens=80)


def test_an_answer_keeps_what_it_was_asked_with(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    state.journal.record_answer(
        "k1", answer_json=FIRST, usage=USAGE, model="m", at=at(1), asked_with="stamp-1"
    )
    record = state.journal.answered("k1")
    assert record is not None and record.asked_with == "stamp-1"


def test_an_answer_asked_again_replaces_the_first_only_when_told(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    state.journal.record_answer(
        "k1", answer_json=FIRST, usage=USAGE, model="m", at=at(1), asked_with="stamp-1"
    )
    with pytest.raises(JournalStateError):
        state.journal.record_answer("k1", answer_json=SECOND, usage=USAGE, model="m", at=at(2))
    state.journal.record_answer(
        "k1", answer_json=SECOND, usage=USAGE, model="m", at=at(2), asked_with="s2", again=True
    )
    record = state.journal.answered("k1")
    assert record is not None
    assert (record.asked_with, record.answered_at) == ("s2", at(2))
    assert "long" in (record.answer_json or "")
    state.journal.mark_applied("k1", run_id="run-1", at=at(3))
    with pytest.raises(JournalStateError):  # an applied answer is never replaced
        state.journal.record_answer(
            "k1", answer_json=FIRST, usage=USAGE, model="m", at=at(4), again=True
        )


def test_an_answer_journalled_before_version_9_has_no_stamp(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    state.journal.record_answer("k1", answer_json=FIRST, usage=USAGE, model="m", at=at(1))
    record = state.journal.get("k1")
    assert record is not None and record.asked_with is None
