"""The usage ledger: one row per call, spend over half-open ranges of instants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memoryd.llm.prices import PriceTable, Usage
from memoryd.state import State, StateValueError

from .conftest import at

MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC)


def _call(state: State, when: datetime, cost: float, **extra: object) -> None:
    state.usage.record(
        at=when,
        model=str(extra.get("model", "claude-haiku-5-5")),
        usage=Usage(100, 10, 5, 50),
        cost_usd=cost,
        job=str(extra.get("job", "heartbeat")),
        batch=bool(extra.get("batch", False)),
        run_id=extra.get("run_id"),  # type: ignore[arg-type]
    )


def test_spend_between_sums_a_half_open_range(state: State) -> None:
    _call(state, MIDNIGHT - timedelta(microseconds=1), 1.0)
    _call(state, MIDNIGHT, 0.25)
    _call(state, MIDNIGHT + timedelta(hours=23, minutes=59), 0.5, job="rewrite", batch=True)
    _call(state, MIDNIGHT + timedelta(days=1), 2.0)

    today = state.usage.spend_between(MIDNIGHT, MIDNIGHT + timedelta(days=1))
    yesterday = state.usage.spend_between(MIDNIGHT - timedelta(days=1), MIDNIGHT)

    assert today == pytest.approx(0.75)
    assert yesterday == pytest.approx(1.0)


def test_bounds_in_another_offset_mean_the_same_instants(state: State) -> None:
    _call(state, MIDNIGHT + timedelta(hours=1), 0.25)
    plus_two = timezone(timedelta(hours=2))
    start = datetime(2026, 3, 2, 2, 0, tzinfo=plus_two)  # == MIDNIGHT UTC
    assert state.usage.spend_between(start, start + timedelta(hours=2)) == pytest.approx(0.25)
    assert (
        state.usage.spend_between(start + timedelta(hours=1, minutes=1), start + timedelta(days=1))
        == 0
    )


def test_totals_add_tokens_and_calls(state: State) -> None:
    _call(state, at(0), 0.1, run_id="r1")
    _call(state, at(1), 0.2, run_id="r1")
    _call(state, at(2), 0.4, run_id="r2")
    totals = state.usage.totals_between(at(0), at(60))
    assert totals.calls == 3
    assert totals.usage == Usage(300, 30, 15, 150)
    assert totals.cost_usd == pytest.approx(0.7)
    by_run = state.usage.totals_for_run("r1")
    assert by_run.calls == 2
    assert by_run.cost_usd == pytest.approx(0.3)
    empty = state.usage.totals_for_run("nothing")
    assert (empty.calls, empty.usage, empty.cost_usd) == (0, Usage(), 0.0)


def test_costs_from_the_price_table_add_up(state: State) -> None:
    prices = PriceTable()
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000)
    cost = prices.cost("claude-haiku-5-5", usage, batch=True)
    state.usage.record(
        at=at(0), model="claude-haiku-5-5", usage=usage, cost_usd=cost, job="rewrite", batch=True
    )
    assert state.usage.spend_between(at(0), at(1)) == pytest.approx(cost)


def test_a_negative_cost_or_a_naive_time_is_refused(state: State) -> None:
    with pytest.raises(StateValueError):
        _call(state, at(0), -0.01)
    with pytest.raises(StateValueError):
        _call(state, datetime(2026, 3, 2, 12, 0), 0.01)
    assert state.usage.totals_between(at(-60), at(60)).calls == 0
