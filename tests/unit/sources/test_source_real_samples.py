"""The second set of real transcripts (shared/fixtures/transcripts/real), read as written today.

Each test names the point of issue 12 it covers; every point also has a test on the project's own
synthetic transcripts (`tests.fakes.transcripts`) in the format's test module.
"""

from __future__ import annotations

from tests.shared_samples import SHARED_TRANSCRIPTS, requires_shared_transcripts

from .support import make_reader, read_once, texts

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
