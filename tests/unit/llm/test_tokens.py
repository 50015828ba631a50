"""Token estimates per model family, the chunk size under a model's price band, and the
built-in prices (as read in 2026-12)."""

from __future__ import annotations

import math

import pytest

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE
from memoryd.llm.base import estimate_tokens
from memoryd.llm.prices import PRICES_READ, PriceTable, Usage
from memoryd.llm.tokens import (
    BAND_HEADROOM_TOKENS,
    chunk_tokens_for,
    estimate_tokens_for,
    token_factor,
)

TEXT = "The deploy pipeline needs a review before Friday. " * 40


@pytest.mark.parametrize(
    ("model", "factor"),
    [
        ("claude-haiku-5-5", 1.3),
        ("claude-haiku-5-5-20261001", 1.3),
        ("claude-sonnet-5-5", 1.0),
        ("claude-haiku-4-5", 1.0),
        ("my-local-model", 1.0),
    ],
)
def test_estimates_are_calibrated_per_model_family(model: str, factor: float) -> None:
    assert token_factor(model) == factor
    assert estimate_tokens_for(model, TEXT) == math.ceil(estimate_tokens(TEXT) * factor)
    assert estimate_tokens_for(model, "") == 0


def test_haiku_5_5_chunks_stay_under_its_100k_price_band() -> None:
    capped = 100_000 - PROMPT_TOKENS_ALLOWANCE - BAND_HEADROOM_TOKENS
    assert chunk_tokens_for("claude-haiku-5-5", 200_000, PROMPT_TOKENS_ALLOWANCE) == capped
    assert capped + PROMPT_TOKENS_ALLOWANCE < 100_000
    assert chunk_tokens_for("claude-haiku-5-5", 12_000, PROMPT_TOKENS_ALLOWANCE) == 12_000
    # Models without a band keep what was configured.
    assert chunk_tokens_for("claude-sonnet-5-5", 200_000, PROMPT_TOKENS_ALLOWANCE) == 200_000


@pytest.mark.parametrize(
    ("model", "input_price", "output", "write", "read"),
    [
        ("claude-sonnet-5-5", 2.0, 10.0, 2.5, 0.10),
        ("claude-opus-5-5", 4.0, 20.0, 5.0, 0.20),
        ("claude-fable-5-2", 8.0, 40.0, 10.0, 0.20),
        ("claude-mythos-5-2", 8.0, 40.0, 10.0, 0.20),
    ],
)
def test_prices_of_the_5_x_models(
    model: str, input_price: float, output: float, write: float, read: float
) -> None:
    price = PriceTable().get(model)
    assert price is not None
    assert (price.input, price.output) == (input_price, output)
    assert (price.cache_write_price, price.cache_read_price) == (write, read)
    usage = Usage(cache_read_input_tokens=1_000_000)
    assert PriceTable().cost(model, usage) == pytest.approx(read)
    assert PRICES_READ == "2026-12"
