"""The usage ledger: one row per LLM call, for the daily budget and `status`.

The caller computes the cost (memoryd.llm.prices) and the bounds of "today" in UTC; this module
only records and sums. Spend between two instants is the half-open range [start, end), so
consecutive days never count a call twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memoryd.llm.prices import Usage
from memoryd.state._codec import instant_to_text
from memoryd.state.db import StateDB
from memoryd.state.errors import StateValueError

_TOTALS_SELECT = (
    "SELECT count(*) AS calls, total(input_tokens) AS input_tokens,"
    " total(output_tokens) AS output_tokens, total(cache_write_tokens) AS cache_write_tokens,"
    " total(cache_read_tokens) AS cache_read_tokens, total(cost_usd) AS cost_usd FROM usage"
)


@dataclass(frozen=True)
class UsageTotals:
    calls: int
    usage: Usage
    cost_usd: float


class UsageLedger:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def record(
        self,
        *,
        at: datetime,
        model: str,
        usage: Usage,
        cost_usd: float,
        job: str,
        batch: bool = False,
        run_id: str | None = None,
    ) -> None:
        """Add one call to the ledger. Raise StateValueError for a negative cost."""
        if cost_usd < 0:
            raise StateValueError(f"negative cost {cost_usd} for a call to {model}")
        self._db.execute(
            "INSERT INTO usage (at, model, input_tokens, output_tokens, cache_write_tokens,"
            " cache_read_tokens, cost_usd, job, batch, run_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                instant_to_text(at),
                model,
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_creation_input_tokens,
                usage.cache_read_input_tokens,
                float(cost_usd),
                job,
                int(batch),
                run_id,
            ),
        )

    def spend_between(self, start: datetime, end: datetime) -> float:
        """Return the USD spent on calls made in [start, end)."""
        return self.totals_between(start, end).cost_usd

    def totals_between(self, start: datetime, end: datetime) -> UsageTotals:
        """Sum the calls made in [start, end)."""
        return self._totals("at >= ? AND at < ?", (instant_to_text(start), instant_to_text(end)))

    def totals_for_run(self, run_id: str) -> UsageTotals:
        """Sum the calls made by run `run_id` (for its `heartbeat.finished` line)."""
        return self._totals("run_id = ?", (run_id,))

    def totals_for_job(self, job: str) -> UsageTotals:
        """Sum every call the ledger holds of one job (`heartbeat`, `rewrite`)."""
        return self._totals("job = ?", (job,))

    def _totals(self, where: str, parameters: tuple[str, ...]) -> UsageTotals:
        sql = f"{_TOTALS_SELECT} WHERE {where}"
        row = self._db.query_one(sql, parameters)
        assert row is not None  # noqa: S101 - an aggregate always returns one row
        return UsageTotals(
            calls=row["calls"],
            usage=Usage(
                input_tokens=int(row["input_tokens"]),
                output_tokens=int(row["output_tokens"]),
                cache_creation_input_tokens=int(row["cache_write_tokens"]),
                cache_read_input_tokens=int(row["cache_read_tokens"]),
            ),
            cost_usd=float(row["cost_usd"]),
        )
