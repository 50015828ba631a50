"""Every format read from the project's own synthetic transcripts (`tests.fakes.transcripts`).

These hold each format's coverage when the shared real samples are not beside the clone: one
dialogue, written in each format's on-disk layout among the records its reader must drop, reads
back as exactly that dialogue and comes through cleaning unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fakes.transcripts import DECOY, SYNTHETIC_FORMATS, Said, moment
from tests.support.sources import all_turns, make_reader, read_once

from memoryd.sources.clean import clean_conversation
from memoryd.sources.registry import FORMATS

DIALOGUE: list[Said] = [
    ("user", "Plan the spring launch. Grüße aus Köln — 日本語も。"),
    ("assistant", "The launch moves to March.\n\nMarketing starts a week before."),
    ("tool", "3 tickets open"),
    ("assistant", "Three tickets are still open."),
    ("user", "Close them before Friday."),
]


def dialogue_for(fmt: str) -> list[Said]:
    if SYNTHETIC_FORMATS[fmt].tool_turns:
        return DIALOGUE
    return [(role, text) for role, text in DIALOGUE if role != "tool"]


def test_every_registered_format_has_a_synthetic_transcript() -> None:
    assert set(SYNTHETIC_FORMATS) == set(FORMATS)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_synthetic_transcript_reads_back_as_exactly_its_dialogue(
    fmt: str, tmp_path: Path
) -> None:
    synthetic = SYNTHETIC_FORMATS[fmt]
    dialogue = dialogue_for(fmt)
    result = read_once(make_reader(fmt, synthetic.write(tmp_path, dialogue)))

    assert result.skipped == []
    assert result.more is False
    assert result.stats.malformed_lines == 0
    assert [c.session_id for c in result.conversations] == [synthetic.session]
    turns = all_turns(result)
    assert [(t.role, t.text) for t in turns] == dialogue
    assert not any(DECOY in t.text for t in turns)
    assert [t.timestamp for t in turns] == [moment(i) for i in range(len(dialogue))]
    assert [t.trusted for t in turns] == [role != "tool" for role, _ in dialogue]
    assert not any(t.sidechain for t in turns)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_synthetic_dialogue_comes_through_cleaning_unchanged(fmt: str, tmp_path: Path) -> None:
    path = SYNTHETIC_FORMATS[fmt].write(tmp_path, dialogue_for(fmt))
    (conversation,) = read_once(make_reader(fmt, path)).conversations

    cleaned, stats = clean_conversation(conversation)

    assert cleaned.turns == conversation.turns
    assert stats.turns_dropped == 0
    assert stats.bytes_dropped == 0
    assert stats.redactions == {}
