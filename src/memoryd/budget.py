"""Spend control: the ledger of what calls cost, the daily ceiling and the per-heartbeat
ceiling (docs/configuration.md `[budget]`). The heartbeat and the weekly rewrite both spend through
it.

Spend comes from the usage ledger (every call's cost is recorded as it is made), counted per UTC
day. Before each call the budget compares what has been spent plus an estimate of the call with
the ceilings; once a ceiling would be passed, the heartbeat stops early (exit 75) with its
cursors where they are, and `budget.exhausted` is logged once per UTC day.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memoryd.llm.prices import PriceTable, Usage
from memoryd.logs import get_logger
from memoryd.state.facade import State

log = get_logger(__name__)

# A generous guess at one answer's length, for estimating a call before it is made.
OUTPUT_TOKENS_GUESS = 800
# What a heartbeat's call sends besides the transcript (prompt, tool schema, context), for the
# same estimate.
PROMPT_TOKENS_ALLOWANCE = 3000
_LOGGED_KEY = "budget.exhausted_logged"


@dataclass
class Budget:
    daily_usd: float
    heartbeat_usd: float
    model: str
    prices: PriceTable
    state: State
    clock: Callable[[], datetime]

    def estimate(self, input_tokens: int) -> float | None:
        """Estimated USD of one call with this many input tokens (None: the model is unpriced)."""
        price = self.prices.get(self.model)
        if price is None:
            return None
        return (input_tokens * price.input + OUTPUT_TOKENS_GUESS * price.output) / 1e6

    def cost_of(self, usage: Usage, model: str | None = None) -> float:
        """What `usage` costs at the model's price (0 for an unpriced model)."""
        name = model or self.model
        return self.prices.cost(name, usage) if self.prices.knows(name) else 0.0

    def spent_today(self) -> float:
        start = self.clock().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        return self.state.usage.spend_between(start, start + timedelta(days=1))

    def allows(self, input_tokens: int, spent_this_run: float) -> bool:
        """Whether a call of this size stays within both ceilings (0 = no ceiling)."""
        return self.allows_cost(self.estimate(input_tokens), spent_this_run)

    def allows_cost(self, estimate: float | None, spent_this_run: float) -> bool:
        """Whether spending `estimate` USD more stays within both ceilings; an unpriced call
        (None) is not checked. The per-heartbeat ceiling is a share of the day, not a wall: it
        never refuses a heartbeat's first call (else a ceiling below one chunk's estimate would
        stop every heartbeat for ever); the daily ceiling always applies."""
        if estimate is None:
            return True
        if self.daily_usd > 0 and self.spent_today() + estimate > self.daily_usd:
            return False
        if spent_this_run <= 0:
            return True
        return not (self.heartbeat_usd > 0 and spent_this_run + estimate > self.heartbeat_usd)

    def charge(
        self, usage: Usage, model: str | None, *, job: str, run_id: str, batch: bool = False
    ) -> float:
        """Record one call's usage in the ledger, priced (0 for an unpriced model); return the
        cost. Nothing is recorded for a call that used nothing."""
        if usage == Usage():
            return 0.0
        name = model or self.model
        cost = self.prices.cost(name, usage, batch=batch) if self.prices.knows(name) else 0.0
        self.state.usage.record(
            at=self.clock(),
            model=name,
            usage=usage,
            cost_usd=cost,
            job=job,
            batch=batch,
            run_id=run_id,
        )
        return cost

    def log_exhausted_once(self) -> None:
        day = self.clock().astimezone(UTC).date().isoformat()
        if self.state.meta.get(_LOGGED_KEY) != day:
            self.state.meta.set(_LOGGED_KEY, day)
            log.warning(
                "budget.exhausted",
                daily_usd=self.daily_usd,
                heartbeat_usd=self.heartbeat_usd,
                spent_today_usd=round(self.spent_today(), 6),
            )
