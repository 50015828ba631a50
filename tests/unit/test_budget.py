"""The budget: estimates, spend per UTC day from the usage ledger, the two ceilings, charging.

The ledger is a real state database; the clock is a value the test moves.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from memoryd.budget import OUTPUT_TOKENS_GUESS, Budget
from memoryd.llm.prices import ModelPrice, PriceTable, Usage
from memoryd.state import State

MODEL = "test-model"
# $10 per million input tokens, $20 per million output tokens: 100,000 input tokens cost $1.
PRICES = PriceTable({MODEL: ModelPrice(input=10.0, output=20.0, cache_write=12.5, cache_read=1.0)})
NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
GUESS_USD = OUTPUT_TOKENS_GUESS * 20.0 / 1e6  # the estimate's allowance for the answer


@dataclass
class Clock:
    now: datetime = NOON

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def state(tmp_path: Path) -> Iterator[State]:
    opened = State.open(tmp_path / "state" / "state.db")
    yield opened
    opened.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def budget(
    state: State,
    clock: Clock,
    *,
    daily: float = 5.0,
    heartbeat: float = 0.0,
    model: str = MODEL,
) -> Budget:
    return Budget(daily, heartbeat, model, PRICES, state, clock)


def spend(state: State, usd: float, at: datetime, model: str = MODEL) -> None:
    """A call already in the ledger (made by this or another job)."""
    state.usage.record(
        at=at, model=model, usage=Usage(input_tokens=1), cost_usd=usd, job="heartbeat"
    )


# --- estimates and today's spend --------------------------------------------------------------


def test_an_estimate_prices_the_input_and_a_guessed_answer(state: State, clock: Clock) -> None:
    priced = budget(state, clock)

    assert priced.estimate(100_000) == pytest.approx(1.0 + GUESS_USD)
    assert priced.estimate(0) == pytest.approx(GUESS_USD)


def test_an_unpriced_model_has_no_estimate(state: State, clock: Clock) -> None:
    assert budget(state, clock, model="my-local-model").estimate(100_000) is None


def test_spend_today_counts_the_current_utc_day_only(state: State, clock: Clock) -> None:
    midnight = datetime(2026, 3, 2, tzinfo=UTC)
    spend(state, 1.0, midnight - timedelta(microseconds=1))
    spend(state, 0.25, midnight)
    spend(state, 0.5, midnight + timedelta(hours=23, minutes=59))
    spend(state, 2.0, midnight + timedelta(days=1))

    assert budget(state, clock).spent_today() == pytest.approx(0.75)


def test_today_is_the_utc_day_whatever_zone_the_clock_speaks(state: State, clock: Clock) -> None:
    spend(state, 0.5, datetime(2026, 3, 1, 20, 0, tzinfo=UTC))
    spend(state, 2.0, datetime(2026, 3, 2, 1, 0, tzinfo=UTC))
    # 08:00 on March 2nd in UTC+10 is 22:00 on March 1st in UTC.
    clock.now = datetime(2026, 3, 2, 8, 0, tzinfo=timezone(timedelta(hours=10)))

    assert budget(state, clock).spent_today() == pytest.approx(0.5)


def test_spend_of_an_earlier_day_no_longer_counts_once_the_day_turns(
    state: State, clock: Clock
) -> None:
    spend(state, 4.0, NOON)
    priced = budget(state, clock)
    assert not priced.allows_cost(2.0, 0.0)

    clock.now = NOON + timedelta(days=1)

    assert priced.spent_today() == 0.0
    assert priced.allows_cost(2.0, 0.0)


# --- the ceilings -----------------------------------------------------------------------------


def test_the_daily_ceiling_allows_up_to_it_and_refuses_past_it(state: State, clock: Clock) -> None:
    spend(state, 4.0, NOON - timedelta(hours=1))
    priced = budget(state, clock, daily=5.0)

    assert priced.allows_cost(1.0, 0.0)  # exactly at the ceiling
    assert not priced.allows_cost(1.01, 0.0)


def test_the_daily_ceiling_counts_spend_of_every_job_of_the_day(state: State, clock: Clock) -> None:
    state.usage.record(
        at=NOON - timedelta(hours=2),
        model=MODEL,
        usage=Usage(input_tokens=1),
        cost_usd=4.5,
        job="rewrite",
    )

    assert not budget(state, clock, daily=5.0).allows_cost(1.0, spent_this_run=0.0)


def test_the_heartbeat_ceiling_counts_only_this_runs_spend(state: State, clock: Clock) -> None:
    priced = budget(state, clock, daily=0.0, heartbeat=1.0)

    assert priced.allows_cost(0.4, spent_this_run=0.6)
    assert not priced.allows_cost(0.5, spent_this_run=0.6)


def test_the_heartbeat_ceiling_never_refuses_a_heartbeats_first_call(
    state: State, clock: Clock
) -> None:
    # A ceiling below one chunk's estimate must not stop every heartbeat for ever.
    tight = budget(state, clock, daily=0.0, heartbeat=0.01)

    assert tight.allows_cost(0.5, spent_this_run=0.0)
    assert not tight.allows_cost(0.5, spent_this_run=0.5)
    spend(state, 4.9, NOON - timedelta(hours=1))
    assert not budget(state, clock, daily=5.0, heartbeat=0.01).allows_cost(0.5, 0.0)  # the day


def test_both_ceilings_apply_together(state: State, clock: Clock) -> None:
    spend(state, 4.5, NOON - timedelta(hours=1))
    priced = budget(state, clock, daily=5.0, heartbeat=10.0)

    assert not priced.allows_cost(1.0, spent_this_run=0.0)  # the day is nearly spent
    assert not budget(state, clock, daily=100.0, heartbeat=1.0).allows_cost(1.0, 0.5)


def test_zero_means_no_ceiling(state: State, clock: Clock) -> None:
    spend(state, 1_000.0, NOON - timedelta(hours=1))
    unbounded = budget(state, clock, daily=0.0, heartbeat=0.0)

    assert unbounded.allows_cost(1_000_000.0, spent_this_run=1_000_000.0)
    assert unbounded.allows(10**9, spent_this_run=1_000.0)


def test_allows_checks_the_estimate_of_a_call_of_that_size(state: State, clock: Clock) -> None:
    priced = budget(state, clock, daily=1.0)

    # 90,000 input tokens: $0.90 plus the answer's allowance ($0.016) stays under $1.
    assert priced.allows(90_000, spent_this_run=0.0)
    assert not priced.allows(100_000, spent_this_run=0.0)


def test_an_unpriced_call_is_not_checked(state: State, clock: Clock) -> None:
    spend(state, 50.0, NOON - timedelta(hours=1))
    unpriced = budget(state, clock, daily=5.0, heartbeat=1.0, model="my-local-model")

    assert unpriced.allows(10**6, spent_this_run=50.0)
    assert budget(state, clock, daily=5.0).allows_cost(None, spent_this_run=50.0)


# --- charging ---------------------------------------------------------------------------------


def test_a_charge_is_recorded_in_the_ledger_and_returns_its_cost(
    state: State, clock: Clock
) -> None:
    priced = budget(state, clock)
    usage = Usage(
        input_tokens=100_000,
        output_tokens=50_000,
        cache_creation_input_tokens=80_000,
        cache_read_input_tokens=1_000_000,
    )

    cost = priced.charge(usage, MODEL, job="heartbeat", run_id="run-1")

    # $1 input + $1 output + $1 cache writes + $1 cache reads.
    assert cost == pytest.approx(4.0)
    totals = state.usage.totals_for_run("run-1")
    assert (totals.calls, totals.usage) == (1, usage)
    assert totals.cost_usd == pytest.approx(4.0)
    assert priced.spent_today() == pytest.approx(4.0)


def test_a_batch_call_costs_half(state: State, clock: Clock) -> None:
    priced = budget(state, clock)
    usage = Usage(input_tokens=100_000, output_tokens=50_000)

    cost = priced.charge(usage, MODEL, job="rewrite", run_id="run-1", batch=True)

    assert cost == pytest.approx(1.0)
    assert state.usage.totals_for_run("run-1").cost_usd == pytest.approx(1.0)


def test_a_charge_without_a_model_name_uses_the_budgets_model(state: State, clock: Clock) -> None:
    cost = budget(state, clock).charge(
        Usage(input_tokens=100_000), None, job="heartbeat", run_id="run-1"
    )

    assert cost == pytest.approx(1.0)


def test_an_unpriced_model_is_charged_nothing_but_its_tokens_are_recorded(
    state: State, clock: Clock
) -> None:
    usage = Usage(input_tokens=5_000, output_tokens=700)

    cost = budget(state, clock).charge(usage, "my-local-model", job="heartbeat", run_id="run-1")

    assert cost == 0.0
    totals = state.usage.totals_for_run("run-1")
    assert (totals.calls, totals.usage, totals.cost_usd) == (1, usage, 0.0)


def test_a_call_that_used_nothing_is_not_recorded(state: State, clock: Clock) -> None:
    cost = budget(state, clock).charge(Usage(), MODEL, job="heartbeat", run_id="run-1")

    assert cost == 0.0
    assert state.usage.totals_for_run("run-1").calls == 0


def test_a_charge_is_stamped_with_the_clocks_time(state: State, clock: Clock) -> None:
    priced = budget(state, clock)
    clock.now = NOON - timedelta(days=1)
    priced.charge(Usage(input_tokens=100_000), MODEL, job="heartbeat", run_id="run-1")
    clock.now = NOON

    assert priced.spent_today() == 0.0
    yesterday = NOON.replace(hour=0) - timedelta(days=1)
    assert state.usage.spend_between(yesterday, yesterday + timedelta(days=1)) == pytest.approx(1.0)


# --- budget.exhausted -------------------------------------------------------------------------


def exhausted(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == "budget.exhausted"]


def test_exhaustion_is_logged_once_per_utc_day(state: State, clock: Clock) -> None:
    spend(state, 5.0, NOON - timedelta(hours=1))
    priced = budget(state, clock, daily=5.0, heartbeat=2.0)

    with capture_logs() as logs:
        priced.log_exhausted_once()
        priced.log_exhausted_once()
        # A later heartbeat of the same day, with a budget of its own, stays quiet too.
        clock.now = NOON + timedelta(hours=11, minutes=59)
        budget(state, clock).log_exhausted_once()

    [entry] = exhausted(logs)
    assert entry["log_level"] == "warning"
    assert (entry["daily_usd"], entry["heartbeat_usd"]) == (5.0, 2.0)
    assert entry["spent_today_usd"] == pytest.approx(5.0)


def test_exhaustion_is_logged_again_on_the_next_utc_day(state: State, clock: Clock) -> None:
    priced = budget(state, clock)
    with capture_logs() as logs:
        priced.log_exhausted_once()
        clock.now = datetime(2026, 3, 3, 0, 0, tzinfo=UTC)
        priced.log_exhausted_once()
        # Still March 3rd in UTC, though already March 4th in UTC+10.
        clock.now = datetime(2026, 3, 4, 9, 0, tzinfo=timezone(timedelta(hours=10)))
        priced.log_exhausted_once()

    assert len(exhausted(logs)) == 2
