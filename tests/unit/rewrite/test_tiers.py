"""The decay rule: tiers by age, frequency resistance, next tier-change dates."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.rewrite import TODAY, fact

from memoryd.settings import DecaySettings
from memoryd.store.tiers import TIERS, TierRule, describe, next_change, tier_for, tier_of

DEFAULT = TierRule()
COLDNESS = {tier: position for position, tier in enumerate(TIERS)}

rules = st.builds(
    lambda hot, gap, per, cap: TierRule(hot, hot + gap, per, cap),
    st.integers(0, 60),
    st.integers(1, 120),
    st.floats(0, 30, allow_nan=False),
    st.integers(0, 365),
)


@given(rules, st.integers(0, 1000), st.integers(0, 10_000), st.integers(0, 10_000))
def test_more_accesses_never_make_a_fact_colder(
    rule: TierRule, age: int, fewer: int, extra: int
) -> None:
    assert COLDNESS[tier_for(age, fewer + extra, rule)] <= COLDNESS[tier_for(age, fewer, rule)]


@given(rules, st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 10_000))
def test_more_days_never_make_a_fact_hotter(
    rule: TierRule, age: int, later: int, accesses: int
) -> None:
    assert (
        COLDNESS[tier_for(age + later, accesses, rule)] >= COLDNESS[tier_for(age, accesses, rule)]
    )


@given(st.integers(0, 365))
def test_weekly_use_for_six_months_is_still_warm_after_a_five_week_gap(offset: int) -> None:
    today = TODAY + timedelta(days=offset)
    weekly = fact("jane-doe-001", accesses=26, age=35, today=today)
    assert tier_of(weekly, today, DEFAULT) == "warm"
    # The same gap without that history is cold: the resistance is what keeps it warm.
    assert tier_of(fact("jane-doe-002", accesses=0, age=35, today=today), today, DEFAULT) == "cold"


def test_default_rule_matches_the_documented_numbers() -> None:
    assert [DEFAULT.resistance(n) for n in (0, 1, 3, 7, 26, 10**9)] == [0, 3, 6, 9, 14, 30]
    assert tier_for(7, 0, DEFAULT) == "hot"
    assert tier_for(8, 0, DEFAULT) == "warm"
    assert tier_for(30, 0, DEFAULT) == "warm"
    assert tier_for(31, 0, DEFAULT) == "cold"


def test_resistance_can_be_switched_off_and_capped() -> None:
    off = TierRule(7, 30, 0, 30)
    assert off.resistance(1000) == 0
    assert TierRule(7, 30, 10, 5).resistance(1000) == 5


def test_rule_comes_from_settings_and_refuses_inverted_limits() -> None:
    rule = TierRule.from_settings(
        DecaySettings(
            hot_days=3, warm_days=9, resistance_days_per_doubling=1, max_resistance_days=2
        )
    )
    assert rule == TierRule(3, 9, 1, 2)
    with pytest.raises(ValueError, match="hot_days"):
        TierRule(10, 10)


@given(rules, st.integers(-30, 400), st.integers(0, 5000))
def test_next_change_is_the_first_day_of_a_colder_tier(
    rule: TierRule, age: int, accesses: int
) -> None:
    subject = fact("a-001", accesses=accesses, age=age)
    info = describe(subject, TODAY, rule)
    change = next_change(subject, TODAY, rule)
    if info.tier == "cold":
        assert change is None
        return
    assert change is not None and change > TODAY
    before = tier_of(subject, change - timedelta(days=1), rule)
    assert before == info.tier
    assert COLDNESS[tier_of(subject, change, rule)] == COLDNESS[info.tier] + 1


def test_a_last_access_after_today_counts_as_today() -> None:
    ahead = fact("a-001", age=-3)
    info = describe(ahead, TODAY, DEFAULT)
    assert (info.tier, info.age_days) == ("hot", 0)
    assert info.next_change == date(2026, 3, 21)  # 3 days ahead + 7 hot days + 1
