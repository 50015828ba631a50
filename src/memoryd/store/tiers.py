"""Decay tiers of facts: hot, warm or cold by days since `lastAccessed` (docs/store-format.md, Decay
and summaries).

The rule, with `age` = days from `lastAccessed` to "today" (a date in `schedule.timezone`) and
`n` = `accessCount`:

    resistance(n) = min(max_resistance_days, floor(resistance_days_per_doubling * log2(1 + n)))
    hot   when age <= hot_days  + resistance(n)
    warm  when age <= warm_days + resistance(n)
    cold  otherwise

So every doubling of the uses buys a few more days in each tier, with a ceiling. Invariants, each
checked by a property test:

- more accesses never make a fact colder (resistance never decreases with `n`);
- more days never make a fact hotter (the limits do not depend on the age);
- with the defaults (7, 30, 3 days per doubling, at most 30), a fact used weekly for six months
  (26 accesses) gets 14 days of resistance, so after a five-week gap (35 days) it is still warm;
- a `lastAccessed` after today (a clock or time-zone skew) counts as age 0.

Only active facts have a tier; superseded facts are never summarized. The date on which a fact
next changes tier follows from the same limits, so the passing of days alone tells which
entities' summaries must change (`next_change`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final, Literal, Protocol

from memoryd.store.items import Fact


class DecayLimits(Protocol):
    """The configuration's `[decay]` table, as the rule reads it (`settings.DecaySettings`)."""

    @property
    def hot_days(self) -> int: ...
    @property
    def warm_days(self) -> int: ...
    @property
    def resistance_days_per_doubling(self) -> float: ...
    @property
    def max_resistance_days(self) -> int: ...


Tier = Literal["hot", "warm", "cold"]
TIERS: Final[tuple[Tier, ...]] = ("hot", "warm", "cold")


@dataclass(frozen=True)
class TierRule:
    """The decay rule's parameters (config `[decay]`)."""

    hot_days: int = 7
    warm_days: int = 30
    resistance_days_per_doubling: float = 3.0
    max_resistance_days: int = 30

    def __post_init__(self) -> None:
        if self.hot_days < 0 or self.warm_days <= self.hot_days:
            raise ValueError("decay needs 0 <= hot_days < warm_days")
        if self.resistance_days_per_doubling < 0 or self.max_resistance_days < 0:
            raise ValueError("resistance must not be negative")

    @classmethod
    def from_settings(cls, decay: DecayLimits) -> TierRule:
        return cls(
            hot_days=decay.hot_days,
            warm_days=decay.warm_days,
            resistance_days_per_doubling=decay.resistance_days_per_doubling,
            max_resistance_days=decay.max_resistance_days,
        )

    def resistance(self, access_count: int) -> int:
        """Extra days a fact used `access_count` times stays in each tier."""
        if access_count <= 0 or self.resistance_days_per_doubling == 0:
            return 0
        days = math.floor(self.resistance_days_per_doubling * math.log2(1 + access_count))
        return min(self.max_resistance_days, days)

    def limits(self, access_count: int) -> tuple[int, int]:
        """The last age (in days) at which a fact is hot, and the last at which it is warm."""
        extra = self.resistance(access_count)
        return self.hot_days + extra, self.warm_days + extra


@dataclass(frozen=True)
class TierInfo:
    """Why a fact has its tier: the numbers `memoryd explain` shows."""

    tier: Tier
    age_days: int
    access_count: int
    resistance_days: int
    hot_until_age: int
    warm_until_age: int
    next_change: date | None  # the first day on which the tier is colder; None when cold


def age_in_days(last_accessed: date, today: date) -> int:
    return max(0, (today - last_accessed).days)


def tier_for(age_days: int, access_count: int, rule: TierRule) -> Tier:
    """The tier of an active fact `age_days` old, used `access_count` times."""
    hot_limit, warm_limit = rule.limits(access_count)
    if age_days <= hot_limit:
        return "hot"
    return "warm" if age_days <= warm_limit else "cold"


def tier_of(fact: Fact, today: date, rule: TierRule) -> Tier:
    return tier_for(age_in_days(fact.last_accessed, today), fact.access_count, rule)


def describe(fact: Fact, today: date, rule: TierRule) -> TierInfo:
    """The tier of `fact` today and the numbers behind it."""
    age = age_in_days(fact.last_accessed, today)
    hot_limit, warm_limit = rule.limits(fact.access_count)
    tier = tier_for(age, fact.access_count, rule)
    return TierInfo(
        tier=tier,
        age_days=age,
        access_count=fact.access_count,
        resistance_days=rule.resistance(fact.access_count),
        hot_until_age=hot_limit,
        warm_until_age=warm_limit,
        next_change=_next_change(fact.last_accessed, today, tier, hot_limit, warm_limit),
    )


def classify(
    last_accessed: date, access_count: int, today: date, rule: TierRule
) -> tuple[Tier, date | None]:
    """The tier and next tier-change day from the two fields that decide them (the fast form
    of `describe`, for the selection pass over a whole store)."""
    age = age_in_days(last_accessed, today)
    hot_limit, warm_limit = rule.limits(access_count)
    tier = tier_for(age, access_count, rule)
    return tier, _next_change(last_accessed, today, tier, hot_limit, warm_limit)


def next_change(fact: Fact, today: date, rule: TierRule) -> date | None:
    """The first day after `today` on which `fact` (unchanged) is in a colder tier."""
    return describe(fact, today, rule).next_change


def _next_change(
    last_accessed: date, today: date, tier: Tier, hot_limit: int, warm_limit: int
) -> date | None:
    if tier == "cold":
        return None
    limit = hot_limit if tier == "hot" else warm_limit
    # A future lastAccessed counts as age 0 until it passes, so the change is never before
    # tomorrow.
    return max(today + timedelta(days=1), last_accessed + timedelta(days=limit + 1))
