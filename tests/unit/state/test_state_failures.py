"""Failure counting once per heartbeat, quarantine at the threshold, and `retry`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.state import State
from memoryd.state.failures import MAX_ERROR_CHARS

from .conftest import at

PLAN = '{"file": "/t/a.jsonl", "range": [4096, 8192]}'


def _fail(state: State, run: int, error: str = "invalid answer", key: str = "k1") -> bool:
    record = state.failures.record_failure(
        key, run_id=f"run-{run}", error=error, plan_json=PLAN, at=at(run)
    )
    return record.newly_quarantined


def test_failures_count_once_per_heartbeat(state: State) -> None:
    _fail(state, 1, "first try")
    _fail(state, 1, "retry within the same heartbeat")
    record = state.failures.get("k1")
    assert record is not None
    assert record.failures == 1
    assert record.last_error == "retry within the same heartbeat"
    assert not record.quarantined


def test_the_third_failed_heartbeat_quarantines_once(state: State) -> None:
    assert [_fail(state, run) for run in (1, 2, 3, 4)] == [False, False, True, False]
    quarantined = state.failures.quarantined()
    assert [q.chunk_key for q in quarantined] == ["k1"]
    assert quarantined[0].quarantined_at == at(3)
    assert quarantined[0].failures == 4
    assert quarantined[0].plan_json == '{"file":"/t/a.jsonl","range":[4096,8192]}'
    assert state.failures.is_quarantined("k1")
    assert state.failures.failing() == []


def test_the_threshold_is_a_parameter(state: State) -> None:
    record = state.failures.record_failure(
        "k1", run_id="r", error="e", plan_json="{}", at=at(0), threshold=1
    )
    assert record.newly_quarantined
    assert record.quarantined


def test_retry_requeues_every_quarantined_chunk_and_restarts_its_count(state: State) -> None:
    for run in (1, 2, 3):
        _fail(state, run, key="a")
        _fail(state, run, key="b")
    _fail(state, 3, key="still-failing")

    assert state.failures.requeue_all(at(10)) == 2

    assert state.failures.quarantined() == []
    assert [r.chunk_key for r in state.failures.requeued()] == ["a", "b"]
    assert not state.failures.is_quarantined("a")
    # One more failure is one failure, not a fourth.
    assert not _fail(state, 11, key="a")
    record = state.failures.get("a")
    assert record is not None
    assert record.failures == 1


def test_success_clears_the_chunk(state: State) -> None:
    _fail(state, 1)
    assert state.failures.clear("k1")
    assert state.failures.get("k1") is None
    assert not state.failures.clear("k1")


def test_long_error_messages_are_bounded(state: State) -> None:
    _fail(state, 1, error="x" * (MAX_ERROR_CHARS * 3))
    record = state.failures.get("k1")
    assert record is not None
    assert len(record.last_error) == MAX_ERROR_CHARS


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=15))
def test_the_count_is_the_number_of_heartbeats_that_failed(
    tmp_path_factory: pytest.TempPathFactory, runs: list[int]
) -> None:
    with State.open(tmp_path_factory.mktemp("failures") / "state.db") as state:
        newly = [_fail(state, run) for run in sorted(runs)]
        record = state.failures.get("k1")
        assert record is not None
        heartbeats = len(set(runs))
        assert record.failures == heartbeats
        assert record.quarantined == (heartbeats >= 3)
        assert newly.count(True) == (1 if heartbeats >= 3 else 0)
