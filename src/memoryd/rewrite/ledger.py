"""What the rewrite spends: each call recorded in the usage ledger, and the daily budget.

Every answer received is recorded (job `rewrite`, `batch` set for Message Batch results, which
cost half) before it is used, so a refused or stale answer is still counted. Before a call, or a
batch, the estimated cost is checked against `budget.daily_usd` (0 = no ceiling) for the UTC day,
the same day the heartbeat's budget uses; a model without a known price is not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from memoryd.budget import Budget
from memoryd.llm.base import ToolRequest
from memoryd.llm.prices import PriceTable, Usage
from memoryd.llm.tokens import estimate_tokens_for
from memoryd.state.facade import State

JOB = "rewrite"
# A guess of a call's output and of the tool definition's input, for the estimate only.
_OUTPUT_TOKENS_GUESS = 600
_TOOL_TOKENS_GUESS = 500


class Ledger:
    """Records the run's calls and keeps its running totals."""

    def __init__(
        self,
        state: State,
        prices: PriceTable,
        *,
        model: str,
        daily_usd: float,
        run_id: str,
        clock: Callable[[], datetime],
    ) -> None:
        # The heartbeat's budget, with no per-run ceiling: one ledger, one daily ceiling.
        self._budget = Budget(daily_usd, 0.0, model, prices, state, clock)
        self._prices = prices
        self._model = model
        self._run_id = run_id
        self.usage = Usage()
        self.cost_usd = 0.0

    def charge(self, usage: Usage, model: str | None, *, batch: bool) -> None:
        cost = self._budget.charge(usage, model, job=JOB, run_id=self._run_id, batch=batch)
        self.usage = self.usage + usage
        self.cost_usd += cost

    def within_budget(self, requests: Sequence[ToolRequest], *, batch: bool = False) -> bool:
        """Whether sending `requests` now stays within today's budget (by estimate)."""
        price = self._prices.get(self._model)
        if price is None:
            return True
        tokens = sum(
            estimate_tokens_for(r.model, r.system + r.user_content) + _TOOL_TOKENS_GUESS
            for r in requests
        )
        output = len(requests) * _OUTPUT_TOKENS_GUESS
        estimate = (tokens * price.input + output * price.output) / 1e6
        if batch:
            estimate /= 2
        return self._budget.allows_cost(estimate, spent_this_run=0.0)
