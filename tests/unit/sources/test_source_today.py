"""Formats as agents write them today, on the project's own synthetic transcripts.

The same points are checked on the real samples in `test_source_real_samples`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import zstandard
from structlog.testing import capture_logs
from tests.fakes.transcripts import (
    CODEX_SESSION,
    DECOY,
    Said,
    gateway_envelope,
    moment,
    write_aider_history,
    write_codex,
)
from tests.support.sources import all_turns, make_reader, read_once, texts

from memoryd.sources._envelope import strip_envelope


def test_the_current_gateway_envelope_is_stripped_and_dates_the_message() -> None:
    text, sent = strip_envelope(gateway_envelope(3, "what is on today?"))
    assert text == "what is on today?"
    assert sent == moment(3)
    text, sent = strip_envelope(gateway_envelope(4, "no stamp", stamp=False))
    assert (text, sent) == ("no stamp", moment(4))
    old = 'Sender (untrusted metadata):\n```json\n{"label": "x"}\n```\n\n'
    old += "[Thu 2026-02-26 07:49 PST] hi"
    assert strip_envelope(old) == ("hi", None)  # a named zone is ambiguous: no time
    plain = "Conversation info is what I need (untrusted or not)"
    assert strip_envelope(plain) == (plain, None)


def write_memory_file(folder: Path) -> Path:
    """An OpenClaw session-memory file: header, then `user:`/`assistant:` lines, user text in
    the gateway's envelope; it opens with an assistant message written before the first user
    message but after the header's time."""
    lines = [
        f"# Session: {moment(30):%Y-%m-%d %H:%M:%S} UTC",
        "",
        f"- **Session Key**: agent:main:telegram:group:{DECOY}",
        "- **Session ID**: memory-session-1",
        "- **Source**: telegram",
        "",
        "## Conversation Summary",
        "",
        "assistant: Here is the news.",
        "user: " + gateway_envelope(2, "any news about agents?", stamp=False),
        "assistant: Two releases this week.",
        "user: " + gateway_envelope(5, "and the launch?"),
        "assistant: Friday.",
    ]
    path = folder / "memory" / "2026-03-01-news.md"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_markdown_strips_the_envelope_and_stamps_turns_with_their_own_times(
    tmp_path: Path,
) -> None:
    result = read_once(make_reader("markdown", write_memory_file(tmp_path)))
    turns = all_turns(result)
    assert [(t.role, t.text) for t in turns] == [
        ("assistant", "Here is the news."),
        ("user", "any news about agents?"),
        ("assistant", "Two releases this week."),
        ("user", "and the launch?"),
        ("assistant", "Friday."),
    ]
    assert not any(DECOY in t.text for t in turns)
    assert [t.timestamp for t in turns] == [moment(2), moment(2), moment(2), moment(5), moment(5)]
    assert result.conversations[0].session_id == "memory-session-1"


@pytest.mark.parametrize("message", [1, 2, 3, 4])
def test_markdown_times_hold_across_reads(tmp_path: Path, message: int) -> None:
    path = write_memory_file(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    starts = [i for i, text in enumerate(lines) if text.startswith(("user:", "assistant:"))]
    split = starts[message]  # OpenClaw writes a memory file whole; at worst between messages
    path.write_text("".join(lines[:split]), encoding="utf-8")
    reader = make_reader("markdown", path)
    first = read_once(reader)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines[split:]))
    second = read_once(reader, first.cursors)
    users = [t for t in all_turns(first) + all_turns(second) if t.role == "user"]
    assert [t.timestamp for t in users] == [moment(2), moment(5)]
    assert all(t.timestamp < datetime(2026, 3, 2, tzinfo=UTC) for t in users)


def test_a_codex_rollout_compressed_to_zst_is_read_and_followed(tmp_path: Path) -> None:
    dialogue: list[Said] = [("user", "launch date?"), ("assistant", "Friday."), ("user", "ok")]
    sessions = write_codex(tmp_path, dialogue)
    (plain,) = sessions.rglob("*.jsonl")
    whole = plain.read_bytes()
    lines = whole.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"ok"' in line)
    plain.write_bytes(b"".join(lines[:cut]))
    reader = make_reader("codex", sessions)
    first = read_once(reader)
    packed = plain.with_name(plain.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(whole))
    both = read_once(reader, first.cursors)  # while both are there, the plain one is read
    assert set(both.cursors) == {str(plain)}
    plain.unlink()  # Codex compressed the finished rollout
    second = read_once(reader, both.cursors)
    assert texts(first) + texts(both) + texts(second) == [text for _, text in dialogue]
    assert second.stats.files_moved == 1
    assert texts(second) == ["ok"]
    fresh = read_once(make_reader("codex", packed))
    assert texts(fresh) == [text for _, text in dialogue]
    assert fresh.conversations[0].session_id == CODEX_SESSION


def test_a_broken_zst_rollout_is_skipped_with_its_reason(tmp_path: Path) -> None:
    broken = tmp_path / "rollout-2026-03-01T10-00-00-x.jsonl.zst"
    broken.write_bytes(b"not zstd at all")
    with capture_logs() as logs:
        result = read_once(make_reader("codex", tmp_path))
    assert [s.path for s in result.skipped] == [str(broken)]
    assert any(e["event"] == "source.skipped" and e["path"] == str(broken) for e in logs)


def test_a_line_holding_two_records_yields_both(tmp_path: Path) -> None:
    first = {"role": "user", "content": "first", "timestamp": "2026-03-01T09:00:00Z"}
    second = {
        "role": "assistant",
        "content": "the final reply",
        "timestamp": "2026-03-01T09:01:00Z",
    }
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(first) + json.dumps(second) + "\n", encoding="utf-8")
    result = read_once(make_reader("jsonl", path))
    assert texts(result) == ["first", "the final reply"]
    assert result.stats.malformed_lines == 0
    path.write_text(json.dumps(first) + "{broken\n", encoding="utf-8")
    assert read_once(make_reader("jsonl", path)).stats.malformed_lines == 1


def test_an_aider_history_gives_its_dialogue_without_commands_notices_or_echoes(
    tmp_path: Path,
) -> None:
    dialogue: list[Said] = [
        ("user", "why is the cache\nso slow?"),
        ("assistant", "It is rebuilt on every call.\n\nCache it once."),
        ("user", "do it"),
        ("assistant", "Done."),
    ]
    path = write_aider_history(tmp_path, dialogue)
    result = read_once(make_reader("markdown", tmp_path / "repo"))
    assert [(t.role, t.text) for t in all_turns(result)] == dialogue
    assert not any(DECOY in t.text for t in all_turns(result))
    (conversation,) = result.conversations
    assert conversation.session_id == f"aider-{moment(0):%Y-%m-%dT%H:%M:%S}"
    assert {t.timestamp for t in conversation.turns} == {moment(0)}
    assert result.skipped == []
    # appended later, as aider writes: read from where the last read stopped
    with path.open("a", encoding="utf-8") as handle:
        handle.write("#### and the tests?  \n\nAll green.\n")
    more = read_once(make_reader("markdown", path), result.cursors)
    assert [(t.role, t.text) for t in all_turns(more)] == [
        ("user", "and the tests?"),
        ("assistant", "All green."),
    ]
