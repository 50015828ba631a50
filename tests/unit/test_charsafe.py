"""Unsafe characters never reach what memoryd writes; look-alike names compare equal."""

from __future__ import annotations

import unicodedata
from collections import deque
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs
from tests.support.extractors import make_store

from memoryd.charsafe import skeleton, strip_unsafe
from memoryd.extractors.chunking import cut_chunks
from memoryd.extractors.extract import ChunkContext, InvalidAnswerError
from memoryd.extractors.llm_extractor import LLMExtractor
from memoryd.llm.base import ToolRequest, ToolResult
from memoryd.llm.prices import Usage
from memoryd.redaction import redact
from memoryd.sources.clean import clean_text
from memoryd.sources.model import Conversation, Provenance, Turn
from memoryd.store.catalog import EntityCatalog
from memoryd.worktree import UnitOfWork

ESC = "\x1b"
RLO = "\u202e"
ZWSP = "\u200b"
CYRILLIC_ACME = "\u0410\u0441me"  # capital A and small es from Cyrillic


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{ESC}[31mred{ESC}[0m text", "red text"),
        (f"title{ESC}]0;pwned\x07 done", "title done"),
        ("bell\x07 and backspace\x08", "bell and backspace"),
        (f"invoice{RLO}txt.exe", "invoicetxt.exe"),
        (f"pass{ZWSP}word and{chr(0xFEFF)} bom", "password and bom"),
        ("c1 \x9b control", "c1  control"),
        ("tab\tand\nlines\r\n stay", "tab\tand\nlines\r\n stay"),
        ("ordinary ünïcödé, 日本語, emoji 🙂", "ordinary ünïcödé, 日本語, emoji 🙂"),
    ],
)
def test_unsafe_characters_are_removed_and_the_rest_kept(text: str, expected: str) -> None:
    assert strip_unsafe(text) == expected


@given(st.text())
def test_strip_unsafe_is_idempotent_and_leaves_no_control(text: str) -> None:
    once = strip_unsafe(text)

    assert strip_unsafe(once) == once
    assert not any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in once)
    assert ESC not in once
    assert RLO not in once


def test_a_look_alike_name_has_the_same_skeleton() -> None:
    assert skeleton(CYRILLIC_ACME) == skeleton("Acme")
    assert skeleton("Acm\u200be") == skeleton("acme")
    assert skeleton("\u03bfpen\u03b1i") == skeleton("openai")  # Greek omicron and alpha
    assert skeleton("Acme") != skeleton("Acne")


def test_cleaning_removes_escape_sequences_before_redaction() -> None:
    # A zero-width space inside the key would otherwise hide the assignment from the rules.
    text = f"{ESC}[1mpass{ZWSP}word=hunter2x{ESC}[0m"

    assert clean_text(text).text == "password=[REDACTED:password]"


class _Client:
    def __init__(self, *answers: dict[str, Any] | None) -> None:
        self.answers = deque(answers)

    def call_tool(self, request: ToolRequest) -> ToolResult:
        return ToolResult(
            tool_input=self.answers.popleft(),
            stop_reason="tool_use",
            usage=Usage(input_tokens=10, output_tokens=1),
            model=request.model,
            request_id="req_1",
        )


def test_an_invalid_answer_is_scrubbed_before_it_is_kept() -> None:
    secret = "ghp_" + "a1B2c3D4e5" * 4
    invalid = {"tacit": f"token={secret} echoed"}  # a string where a list belongs
    turn = Turn(
        role="user",
        text="hello",
        timestamp=datetime(2026, 3, 1, 9, 30, tzinfo=UTC),
        provenance=Provenance("/logs/s.jsonl", (1, 1)),
    )
    chunk = cut_chunks(Conversation("ops", "s1", "jsonl", (turn,)), ZoneInfo("UTC"), 5000)[0]
    extractor = LLMExtractor(_Client(invalid, invalid), model="m", max_tokens=100, scrub=redact)

    with pytest.raises(InvalidAnswerError) as caught:
        extractor.extract(chunk, ChunkContext("", ""))

    assert secret not in caught.value.raw_answer
    assert secret not in caught.value.reason
    assert "[REDACTED:" in caught.value.raw_answer


def test_a_look_alike_entity_resolves_to_the_existing_one_and_is_logged(tmp_path: Any) -> None:

    uow = UnitOfWork(make_store(tmp_path))
    catalog = EntityCatalog.load(uow)
    acme = catalog.create("Acme", "company", today=datetime(2026, 3, 1).date())

    with capture_logs() as logs:
        found = catalog.resolve(CYRILLIC_ACME, "company")
        other_kind = catalog.create(CYRILLIC_ACME, "project", today=datetime(2026, 3, 1).date())

    assert found == acme
    assert other_kind.ref != acme.ref
    events = [entry["event"] for entry in logs]
    assert "entity.lookalike_resolved" in events
    assert "entity.lookalike_created" in events
