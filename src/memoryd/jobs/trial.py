"""A trial extraction: the request a heartbeat sends, on a tiny made-up excerpt, to one model.

`memoryd check --online` proves with it that a model can do memoryd's task, not merely answer:
the same system prompt, tool definition, tool choice (forced, or automatic for the models that
refuse a forced one), prompt caching and validation as a heartbeat's, and the same one
corrective retry after an invalid answer. The excerpt names no real person and holds no secret.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import ChunkContext, Extraction
from memoryd.extractors.llm_extractor import LLMExtractor
from memoryd.jobs.parts import make_scrubber
from memoryd.llm.base import LLMClient
from memoryd.settings import Settings
from memoryd.sources.model import Provenance, Role, Turn

TRIAL_DAY = date(2026, 1, 5)
TRIAL_TURNS: tuple[tuple[Role, str], ...] = (
    ("user", "Quick note for later: Jane Example joined Acme Widgets as CTO this week."),
    ("assistant", "Noted: Jane Example is the new CTO of Acme Widgets."),
)


def trial_chunk() -> Chunk:
    """The tiny excerpt a trial extraction sends (fixed, so every trial sends the same bytes
    apart from the fence's random marker)."""
    zone = ZoneInfo("UTC")
    turns = tuple(
        Turn(
            role=role,
            text=text,
            timestamp=datetime(2026, 1, 5, 9, minute, tzinfo=UTC),
            provenance=Provenance(file="memoryd-check", lines=(minute + 1, minute + 1)),
        )
        for minute, (role, text) in enumerate(TRIAL_TURNS)
    )
    return Chunk(
        agent="memoryd-check",
        session_id="memoryd-check",
        source_format="jsonl",
        routine=None,
        day=TRIAL_DAY,
        part=0,
        turns=turns,
        zone=zone,
    )


def trial_extraction(client: LLMClient, settings: Settings, model: str) -> Extraction:
    """Ask `model` to extract from the trial excerpt as a heartbeat would; return the valid
    answer. Raise InvalidAnswerError when it answers outside the tool contract twice, and the
    client's LLMError when the request is refused."""
    extractor = LLMExtractor(
        client,
        model=model,
        max_tokens=settings.llm.max_output_tokens,
        scrub=make_scrubber(settings),
    )
    return extractor.extract(trial_chunk(), ChunkContext(known_entities="", skills_index=""))
