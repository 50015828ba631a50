"""The heartbeat's options built from the settings: the chunk size and token estimates are in
the model's own tokens, clamped under its price band (`memoryd.llm.tokens`)."""

from __future__ import annotations

import math
from pathlib import Path

from structlog.testing import capture_logs
from tests.support.harness import Workspace

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE
from memoryd.jobs.heartbeat import heartbeat_options
from memoryd.llm.base import estimate_tokens
from memoryd.llm.tokens import BAND_HEADROOM_TOKENS

TEXT = "The deploy pipeline needs a review before Friday. " * 40


def test_a_heartbeat_clamps_the_chunk_size_and_says_so(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    haiku = ws.settings(llm={"model": "claude-haiku-5-5", "chunk_tokens": 200_000})
    with capture_logs() as events:
        options = heartbeat_options(haiku, "host")
    assert options.chunk_tokens == 100_000 - PROMPT_TOKENS_ALLOWANCE - BAND_HEADROOM_TOKENS
    assert options.token_factor == 1.3
    assert options.estimate_tokens(TEXT) == math.ceil(estimate_tokens(TEXT) * 1.3)
    (clamped,) = [e for e in events if e["event"] == "llm.chunk_tokens_clamped"]
    assert (clamped["configured"], clamped["effective"]) == (200_000, options.chunk_tokens)

    sonnet = ws.settings(llm={"model": "claude-sonnet-5-5", "chunk_tokens": 200_000})
    markers = ws.settings("markers", llm={"chunk_tokens": 200_000})
    with capture_logs() as quiet:
        assert heartbeat_options(sonnet, "host").chunk_tokens == 200_000
        plain = heartbeat_options(markers, "host")  # no model is asked: nothing to calibrate
    assert (plain.chunk_tokens, plain.token_factor) == (200_000, 1.0)
    assert not [e for e in quiet if e["event"] == "llm.chunk_tokens_clamped"]
