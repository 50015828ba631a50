"""The second set of real transcripts (shared/fixtures/transcripts/real), read as written today.

Each test checks one point of how a format is written today; every point also has a test on the
project's own synthetic transcripts (`tests.fakes.transcripts`) in the format's test module.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import zstandard
from tests.support.shared_samples import SHARED_TRANSCRIPTS, requires_shared_transcripts
from tests.support.sources import all_turns, make_reader, read_once, texts

REAL = SHARED_TRANSCRIPTS / "real"
SPOTTER = REAL / "claude-code" / "spotter"
COMPACTED = SPOTTER / "8463c716-a2ea-4c14-9efa-87158ebd9f20"

pytestmark = requires_shared_transcripts


def test_claude_code_compaction_pseudo_subagent_is_not_read_as_dialogue() -> None:
    compaction = COMPACTED / "subagents" / "agent-acompact-f46190.jsonl"
    alone = read_once(make_reader("claude-code", compaction))
    assert alone.conversations == []
    folder = read_once(make_reader("claude-code", COMPACTED))
    assert folder.skipped == []
    said = texts(folder)
    assert said  # the real subagent agent-a7be2f0 is still read
    assert not any("Your task is to create a detailed summary" in text for text in said)
    assert not any("<analysis>" in text for text in said)
    assert {c.metadata.get("subagent") for c in folder.conversations} == {"a7be2f0"}


def first_question() -> str:
    """The words of the first message of the banter file, after its envelope (the last line)."""
    return raw_user_messages(BANTER)[0].splitlines()[-1]


MEMORY = REAL / "markdown" / "openclaw-memory"
BANTER = MEMORY / "2026-03-18-philosophical-banter.md"
TIMED_OUT = MEMORY / "2026-03-18-request-timed-out-before-a-res.md"


def raw_user_messages(path: Path) -> list[str]:
    """The user messages of a memory file as OpenClaw wrote them, envelope and all."""
    messages: list[list[str]] = []
    current: list[str] | None = None
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.startswith("user: "):
            current = [text.removeprefix("user: ")]
            messages.append(current)
        elif text.startswith("assistant: "):
            current = None
        elif current is not None:
            current.append(text)
    return ["\n".join(lines).strip() for lines in messages]


@pytest.mark.parametrize("path", [BANTER, TIMED_OUT], ids=["banter", "timed-out"])
def test_openclaw_memory_files_lose_their_envelopes_and_keep_their_own_times(path: Path) -> None:
    result = read_once(make_reader("markdown", path))
    assert result.skipped == []
    turns = all_turns(result)
    users = [t for t in turns if t.role == "user"]
    raw = sum(len(text) for text in raw_user_messages(path))
    kept = sum(len(t.text) for t in users)
    assert len(users) == 7
    assert kept < raw * 0.1  # over 90% of what was written as user text is metadata
    for turn in users:
        assert "untrusted metadata" not in turn.text
        assert "sender_id" not in turn.text
    header = datetime(2026, 3, 18, 15, 17, tzinfo=UTC) if path is BANTER else None
    times = [t.timestamp for t in turns]
    assert times == sorted(times)  # no turn dated by the header written after them
    assert len({t.timestamp for t in users}) == len(users)  # each its own time
    if header is not None:
        assert users[0].timestamp == datetime(2026, 3, 18, 9, 42, tzinfo=UTC)
        assert users[0].text == first_question()
        assert all(t.timestamp < header for t in turns)


def test_openclaw_sessions_lose_the_current_envelope(tmp_path: Path) -> None:
    """The real envelopes of a Telegram group, as an OpenClaw session log carries them."""
    wrapped = raw_user_messages(BANTER)
    lines: list[dict[str, object]] = [{"type": "session", "version": 3, "id": "tg-session"}]
    parent = None
    for index, text in enumerate(wrapped):
        uid = f"e{index}"
        lines.append(
            {
                "type": "message",
                "id": uid,
                "parentId": parent,
                "timestamp": f"2026-03-18T09:{index:02d}:00Z",
                "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            }
        )
        parent = uid
    session = tmp_path / "sessions" / "tg-session.jsonl"
    session.parent.mkdir()
    session.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    said = texts(read_once(make_reader("openclaw", session.parent)))
    assert said[0] == first_question()
    assert len(said) == len(wrapped)
    assert sum(map(len, said)) < sum(map(len, wrapped)) * 0.1
    assert not any("untrusted metadata" in text or "username" in text for text in said)


def test_chatgpt_reasoning_summary_is_not_sent_and_citation_markers_are_removed() -> None:
    export = REAL / "chatgpt-export" / "polylogue-real-simple" / "conversations.json"
    raw = export.read_text(encoding="utf-8")
    assert raw.count("\\ue200") + raw.count("\ue200") == 32  # the markers, as exported
    result = read_once(make_reader("chatgpt-export", export))
    assert result.skipped == []
    turns = all_turns(result)
    assert [t.role for t in turns] == ["user", "assistant"]
    assert turns[0].text == "Review"
    answer = turns[1].text
    assert answer.startswith("Below is a frank, craft")
    assert "## Executive verdict" in answer
    assert not any("Reviewing the file" in t.text for t in turns)
    assert not any("\ue000" <= character <= "\uf8ff" for character in answer)
    assert "filecite" not in answer


def test_a_real_codex_rollout_reads_the_same_compressed(tmp_path: Path) -> None:
    (rollout,) = (REAL / "codex").rglob("rollout-2026-02-23T12-40-23-*.jsonl")
    packed = tmp_path / (rollout.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(rollout.read_bytes()))
    plain = read_once(make_reader("codex", rollout))
    compressed = read_once(make_reader("codex", packed))
    assert compressed.skipped == []
    assert texts(compressed) == texts(plain)
    assert len(texts(plain)) > 50
    assert [c.session_id for c in compressed.conversations] == [
        c.session_id for c in plain.conversations
    ]


def test_a_real_line_holding_two_records_keeps_the_final_reply() -> None:
    result = read_once(make_reader("openclaw", REAL / "openclaw" / "pi-mono" / "compact.jsonl"))
    assert result.stats.malformed_lines == 0
    assert texts(result)[-1] == (
        'Done. Removed the "Common patterns" section, keeping only the link to the example file.'
    )


def test_openclaw_trajectory_side_files_are_not_sessions() -> None:
    sessions = REAL / "openclaw" / "gracula" / "agents" / "main" / "sessions"
    reader = make_reader("openclaw", sessions)
    assert [Path(path).name for path in reader.files()] == [
        "codex-web-check-2.jsonl",
        "model-test-kilocode.jsonl",
    ]
    result = read_once(reader)
    assert {c.session_id for c in result.conversations} == {
        "codex-web-check-2",
        "model-test-kilocode",
    }


def test_a_real_aider_history_is_read_not_zero_turns() -> None:
    history = REAL / "markdown" / "aider" / "zen-mcp-server.aider.chat.history.md"
    result = read_once(make_reader("markdown", history))
    assert result.skipped == []
    turns = all_turns(result)
    assert len(turns) == 5
    assert {t.role for t in turns} == {"user"}  # every reply was interrupted
    assert {c.session_id for c in result.conversations} == {"aider-2025-10-23T17:04:56"}
    assert all(t.text.startswith("\u8bf7\u4f60\u5206\u6790") for t in turns)  # the prompts
    assert not any(t.text.startswith(("/add", "/copy-context", ">")) for t in turns)
    assert {t.timestamp for t in turns} == {datetime(2025, 10, 23, 17, 4, 56, tzinfo=UTC)}
