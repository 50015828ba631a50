"""An extractor that answers each chunk only once the test releases it, on the calling (worker)
thread: for tests of the calls sent ahead (`memoryd.heartbeat.ahead`) that need to decide when
an answer arrives. The model call itself is the fake server's business elsewhere."""

from __future__ import annotations

import threading

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import ChunkContext, Extraction, RetryCheck, retry_allowed
from memoryd.llm.prices import Usage
from tests.support.extractors import answer, fact

MODEL = "test-model"
USAGE = Usage(input_tokens=1000, output_tokens=100)
# What USAGE costs at $10 per million input tokens and $20 per million output tokens.
COST = (1000 * 10.0 + 100 * 20.0) / 1e6


class HeldExtractor:
    """Answers each chunk once `release` is set (30 s at most), with one fact of its session."""

    prompt_refs = ("extract-system@test",)

    def __init__(self) -> None:
        self.release = threading.Event()

    def extract(
        self, chunk: Chunk, context: ChunkContext, may_retry: RetryCheck = retry_allowed
    ) -> Extraction:
        assert self.release.wait(30), "the test never released the call"
        given = answer(facts=[fact("Dana Whitfield", f"Leads the {chunk.session_id} rollout")])
        return Extraction(answer=given, usage=USAGE, model=MODEL)
