"""Token estimates per model family, and the largest chunk each model should be sent.

`memoryd.llm.base.estimate_tokens` counts about four ASCII characters per token, which is close
for most Claude tokenizers. Some count more: Haiku 5.5's tokenizer gives about 30% more tokens
than characters / 4 on memoryd's transcripts, so for that family every estimate (chunk sizes,
budget checks, dry runs) is scaled by `TOKEN_FACTORS`. A family with no measured factor gets 1.0.

Some models bill a long prompt at a higher price band: Haiku 5.5 bills a prompt over 100,000
input tokens at $0.50 / $2.50 per million instead of $0.10 / $0.50. memoryd keeps every request
to such a model under its band rather than pricing the band: `chunk_tokens_for` clamps the
configured `llm.chunk_tokens` so that a chunk plus the prompt allowance (system prompt, tool,
known entities, skills index) stays below it, with the estimate's own factor applied.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from memoryd.llm.base import estimate_tokens

# (model id prefix, tokens per chars/4 token), first match wins.
TOKEN_FACTORS: tuple[tuple[str, float], ...] = (("claude-haiku-5-5", 1.3),)
# (model id prefix, input tokens above which a prompt is billed at a higher band).
PRICE_BAND_LIMITS: tuple[tuple[str, int], ...] = (("claude-haiku-5-5", 100_000),)
# Kept below a band's limit on top of the estimate: the estimate is an estimate.
BAND_HEADROOM_TOKENS = 2_000

TokenEstimator = Callable[[str], int]


def token_factor(model: str) -> float:
    """How many of `model`'s tokens one chars/4 estimate token is (1.0 unless measured)."""
    return next((value for prefix, value in TOKEN_FACTORS if model.startswith(prefix)), 1.0)


def scaled_estimate(text: str, factor: float) -> int:
    """`estimate_tokens(text)` scaled by a tokenizer's `factor` (rounded up)."""
    base = estimate_tokens(text)
    return base if factor == 1.0 else math.ceil(base * factor)


def estimate_tokens_for(model: str, text: str) -> int:
    """`estimate_tokens(text)`, calibrated for `model`'s tokenizer family."""
    return scaled_estimate(text, token_factor(model))


def price_band_limit(model: str) -> int | None:
    """The input tokens above which `model` bills a prompt at a higher band, if it has one."""
    return next((value for prefix, value in PRICE_BAND_LIMITS if model.startswith(prefix)), None)


def chunk_tokens_for(model: str, configured: int, prompt_allowance: int) -> int:
    """The chunk size (in `model`'s estimated tokens) to cut for `model`: `configured`, clamped
    so that a chunk plus `prompt_allowance` stays under the model's price band, if it has one.
    Never below 500 tokens (the smallest `llm.chunk_tokens` allowed)."""
    limit = price_band_limit(model)
    if limit is None:
        return configured
    return max(500, min(configured, limit - prompt_allowance - BAND_HEADROOM_TOKENS))
