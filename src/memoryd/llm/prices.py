"""Model prices in USD per million tokens, and the cost of one call's usage.

The built-in table covers the models memoryd is documented with, as read in `PRICES_READ`;
`llm.prices` in the configuration overrides and extends it. Cache writes (5-minute TTL) cost
1.25 times the input price and cache reads 0.1 times, unless a price says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10
BATCH_FACTOR = 0.5


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None

    @property
    def cache_write_price(self) -> float:
        return self.cache_write if self.cache_write is not None else self.input * CACHE_WRITE_FACTOR

    @property
    def cache_read_price(self) -> float:
        return self.cache_read if self.cache_read is not None else self.input * CACHE_READ_FACTOR


# When the built-in prices were read from Anthropic's pricing page; prices change, so
# `llm.prices` can correct any of them without a new release.
PRICES_READ = "2026-12"

BUILTIN_PRICES: Mapping[str, ModelPrice] = {
    # Haiku 5.5's prices hold for prompts up to 100,000 input tokens; above that it bills a
    # higher band ($0.50 / $2.50), which memoryd never reaches: its chunks are clamped to stay
    # under the band (`memoryd.llm.tokens`).
    "claude-haiku-5-5": ModelPrice(input=0.10, output=0.50, cache_write=0.125, cache_read=0.01),
    "claude-sonnet-5-5": ModelPrice(input=2.0, output=10.0, cache_read=0.10),
    "claude-opus-5-5": ModelPrice(input=4.0, output=20.0, cache_read=0.20),
    "claude-fable-5-1": ModelPrice(input=10.0, output=50.0, cache_read=0.25),
    "claude-fable-5-2": ModelPrice(input=8.0, output=40.0, cache_write=10.0, cache_read=0.20),
    "claude-mythos-5-2": ModelPrice(input=8.0, output=40.0, cache_write=10.0, cache_read=0.20),
    "claude-opus-5": ModelPrice(input=5.0, output=25.0),
    "claude-sonnet-5": ModelPrice(input=2.0, output=10.0),
    "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0),
    "claude-sonnet-4-6": ModelPrice(input=3.0, output=15.0),
    "claude-opus-4-6": ModelPrice(input=5.0, output=25.0),
}


@dataclass(frozen=True)
class Usage:
    """Token counts of one call, as the API reports them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )


class PriceTable:
    """Looks up prices: configured overrides first, then the built-in table."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        self._prices = {**BUILTIN_PRICES, **(overrides or {})}

    def get(self, model: str) -> ModelPrice | None:
        return self._prices.get(model)

    def knows(self, model: str) -> bool:
        return model in self._prices

    def cost(self, model: str, usage: Usage, *, batch: bool = False) -> float:
        """Return the USD cost of `usage` on `model`. Raise KeyError for an unpriced model."""
        price = self._prices[model]
        total = (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_creation_input_tokens * price.cache_write_price
            + usage.cache_read_input_tokens * price.cache_read_price
        ) / 1_000_000
        return total * BATCH_FACTOR if batch else total
