"""Cleaning the real samples under shared/fixtures/transcripts, as the readers return them:
scaffolding goes, tool output is bounded and untrusted, and ordinary dialogue is untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.shared_samples import SHARED_TRANSCRIPTS as FIXTURES
from tests.support.shared_samples import requires_shared_transcripts
from tests.support.sources import make_reader, read_once

from memoryd.redaction import find_secrets
from memoryd.sources.clean import clean_conversation
from memoryd.sources.model import Conversation

pytestmark = requires_shared_transcripts

SAMPLES = [
    *(("claude-code", p) for p in sorted((FIXTURES / "claude-code").rglob("*.jsonl"))),
    *(("codex", p) for p in sorted((FIXTURES / "codex").rglob("*.jsonl"))),
    *(("openclaw", p) for p in sorted((FIXTURES / "openclaw").glob("*.jsonl"))),
    *(("chatgpt-export", p) for p in sorted((FIXTURES / "chatgpt-export").glob("*.json"))),
]
LIMIT = 1200


def conversations(fmt: str, path: Path) -> list[Conversation]:
    return read_once(make_reader(fmt, path)).conversations


@pytest.mark.parametrize(
    ("fmt", "path"), SAMPLES, ids=[str(p.relative_to(FIXTURES)) for _, p in SAMPLES]
)
def test_every_sample_cleans_to_bounded_trusted_scaffolding_free_turns(
    fmt: str, path: Path
) -> None:
    read = conversations(fmt, path)
    assert read, "each sample holds dialogue"

    for conversation in read:
        cleaned, stats = clean_conversation(conversation, tool_output_chars=LIMIT)

        assert len(cleaned.turns) + stats.turns_dropped == len(conversation.turns)
        for turn in cleaned.turns:
            assert turn.text == turn.text.strip() != ""
            assert turn.trusted is (turn.role != "tool")
            assert "<system-reminder>" not in turn.text
            assert "<command-message>" not in turn.text
            assert find_secrets(turn.text) == []
            if turn.role == "tool":
                assert len(turn.text) <= LIMIT


def test_system_reminders_in_tool_results_are_stripped_and_counted() -> None:
    path = FIXTURES / "claude-code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    (conversation,) = conversations("claude-code", path)
    reminded = [t for t in conversation.turns if "<system-reminder>" in t.text]
    assert reminded

    cleaned, stats = clean_conversation(conversation)

    assert not any("<system-reminder>" in t.text for t in cleaned.turns)
    closing = "</system-reminder>"
    elements = [
        t.text[t.text.index("<system-reminder>") : t.text.index(closing) + len(closing)]
        for t in reminded
    ]
    assert stats.scaffolding_bytes >= sum(len(element.encode()) for element in elements)
    assert stats.redactions == {}


def test_ordinary_dialogue_comes_through_unchanged() -> None:
    path = FIXTURES / "claude-code/claude-code-log/dag_compact_after_rewind.jsonl"
    (conversation,) = conversations("claude-code", path)

    cleaned, stats = clean_conversation(conversation)

    assert [t.text for t in cleaned.turns] == [t.text for t in conversation.turns]
    assert stats.bytes_dropped == 0
    assert stats.redactions == {}
