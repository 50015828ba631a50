"""Every real or realistic sample under shared/fixtures/transcripts, read with asserted results."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from tests.support.shared_samples import SHARED_TRANSCRIPTS as FIXTURES
from tests.support.shared_samples import requires_shared_transcripts
from tests.support.sources import all_turns, make_reader, read_once, texts

from memoryd.sources.model import Conversation
from memoryd.sources.reader import ReadResult

CLAUDE = FIXTURES / "claude-code"
CODEX = FIXTURES / "codex"

pytestmark = requires_shared_transcripts


def read_file(fmt: str, relative: str) -> ReadResult:
    result = read_once(make_reader(fmt, FIXTURES / relative))
    assert result.skipped == []
    assert result.more is False
    return result


def roles(conversation: Conversation) -> list[str]:
    return [turn.role for turn in conversation.turns]


def test_claude_rewind_keeps_only_the_current_branch_and_skips_the_compaction_summary() -> None:
    result = read_file("claude-code", "claude-code/claude-code-log/dag_compact_after_rewind.jsonl")
    assert texts(result) == [
        "Start",
        "Ready",
        "Second attempt",
        "Second answer",
        "Keep going",
        "Kept going",
        "After compaction",
        "Final answer",
    ]
    assert "First attempt" not in texts(result)
    assert not any("continued from a previous conversation" in t for t in texts(result))
    first = all_turns(result)[0]
    assert first.timestamp == datetime(2025, 7, 1, 10, 0, tzinfo=UTC)
    assert first.provenance.lines == (1, 1)
    assert first.provenance.file.endswith("dag_compact_after_rewind.jsonl")


def test_claude_edge_cases_duplicate_uuid_two_sessions_meta_and_markup() -> None:
    result = read_file("claude-code", "claude-code/polylogue/claude-normalization-main.jsonl")
    sessions = {c.session_id: c for c in result.conversations}
    assert set(sessions) == {"claude-normalization-main", "claude-normalization-other"}
    main = sessions["claude-normalization-main"]
    assert [t.text for t in main.turns] == [
        "Review the parser.",
        "Running the focused checks.",
        "Command running in background with ID: task-bg.",
        "/status",
        "Checking a foreground failure.",
        "command failed",
        "Normalization complete.",
    ]
    assert roles(main) == ["user", "assistant", "tool", "user", "assistant", "tool", "assistant"]
    # the duplicated uuid, the isMeta context, thinking and tool calls are all gone
    joined = "\n".join(texts(result))
    for absent in ("Conflicting duplicate", "environment_context", "inspect the production"):
        assert absent not in joined
    assert "pytest -q tests/unit/sources" not in joined
    assert result.stats.duplicates_dropped == 1
    assert [t.trusted for t in main.turns if t.role == "tool"] == [False, False]
    assert [t.sidechain for t in main.turns][-1] is True
    assert [t.text for t in sessions["claude-normalization-other"].turns] == [
        "An independent session.",
        "Other reply.",
    ]


def test_claude_real_session_with_queue_operations() -> None:
    result = read_file(
        "claude-code", "claude-code/agent-history/real_sessions-claude-session-01.jsonl"
    )
    assert [(t.role, t.text) for t in all_turns(result)] == [
        ("user", "[REDACTED_PROMPT]"),
        ("assistant", "[REDACTED_ASSISTANT_TEXT]"),
    ]
    assert result.conversations[0].session_id == "06090cb1-3e64-433a-bc7e-a621c0f596d2"


def test_claude_v1_session_with_inline_sidechains() -> None:
    result = read_file(
        "claude-code", "claude-code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    )
    turns = all_turns(result)
    counts = Counter((t.role, t.sidechain) for t in turns)
    # 9 main-branch dialogue lines, as the prototype in the research found; the rest is subagents
    assert counts[("user", False)] + counts[("assistant", False)] == 9
    assert counts[("assistant", True)] == 88
    main_dialogue = [t.text for t in turns if not t.sidechain and t.role != "tool"]
    assert main_dialogue[0] == "/orchestrator create TODO app by Next.js"
    assert main_dialogue[-3] == "Thanks! Please update CLAUDE.md for current changes"
    # the leading `summary` record and every thinking or tool_use block are not dialogue
    assert all(t.text.strip() for t in turns)
    assert {c.session_id for c in result.conversations} == {"fe5e1c67-53e7-4862-81ae-d0e013e3270b"}


def test_claude_real_session_with_task_subagents_inline() -> None:
    path = "claude-code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    result = read_file("claude-code", path)
    turns = all_turns(result)
    assert turns[0].text == "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"
    assert Counter(t.role for t in turns if not t.sidechain) == {
        "assistant": 3,
        "user": 1,
        "tool": 13,
    }
    assert all(t.sidechain for t in turns if t.text.startswith("Examine the package.json"))


def test_claude_init_session() -> None:
    path = "claude-code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    result = read_file("claude-code", path)
    turns = all_turns(result)
    assert turns[0].role == "user"
    assert turns[0].text == "/init"
    assert turns[-1].text.startswith("I've created a basic CLAUDE.md file")
    assert Counter(t.role for t in turns) == {"tool": 11, "assistant": 3, "user": 1}


def test_claude_sidechain_integrated() -> None:
    result = read_file("claude-code", "claude-code/claude-code-log/sidechain_integrated.jsonl")
    turns = all_turns(result)
    assert [(t.role, t.sidechain) for t in turns] == [
        ("tool", False),
        ("assistant", True),
        ("tool", True),
        ("assistant", False),
    ]
    assert turns[-1].text.startswith("Excellent research!")


def test_claude_project_directory_attributes_every_subagent_layout() -> None:
    result = read_once(make_reader("claude-code", CLAUDE))
    assert result.skipped == []
    by_subagent = {c.metadata.get("subagent"): c for c in result.conversations}
    # legacy agent-<id>.jsonl beside the session, attributed to the session named inside it
    legacy = by_subagent["test-hash-123"]
    assert legacy.session_id == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    assert [t.text for t in legacy.turns] == [
        "Run the test suite",
        "I'll run the test suite for you.",
    ]
    assert all(t.sidechain for t in legacy.turns)
    # current <session>/subagents/agent-<id>.jsonl layout
    current = by_subagent["showcol1"]
    assert current.session_id == "55550000-0000-4000-8000-000000000001"
    assert all(t.sidechain for t in current.turns)
    assert current.turns[0].text == "Survey src/web and report its layout, with a screenshot."
    assert result.stats.files_read == 11


def test_claude_showcase_session() -> None:
    path = "claude-code/claude-code-log/minimal_showcase/55550000-0000-4000-8000-000000000001.jsonl"
    result = read_file("claude-code", path)
    conversation = result.conversations[0]
    assert roles(conversation) == ["user", "assistant"] + ["tool"] * 3 + ["assistant"] + [
        "tool"
    ] * 2 + ["assistant"]
    assert conversation.turns[-1].text.startswith("Both modules are surveyed")


def test_codex_real_session_drops_developer_and_environment_scaffolding() -> None:
    result = read_file("codex", "codex/agent-history/real_sessions-codex-session-01.jsonl")
    assert [(t.role, t.text) for t in all_turns(result)] == [
        ("user", "[REDACTED_PROMPT]"),
        ("assistant", "[REDACTED_ASSISTANT_TEXT]"),
    ]
    assert result.conversations[0].session_id == "019e9625-802f-7e91-840a-cfe88d14117a"


def test_codex_synthetic_rollout_reads_response_items_only() -> None:
    rollouts = list((CODEX / "claude-code-log").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1
    result = read_once(make_reader("codex", rollouts[0]))
    turns = all_turns(result)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "List the synthetic files."),
        ("tool", "./alpha.txt\n./beta.txt"),
        ("tool", "Done!"),
        ("tool", '{"status":"ok"}'),
        ("assistant", "The synthetic files are alpha.txt and beta.txt."),
    ]
    joined = "\n".join(t.text for t in turns)
    assert "SYNTHETIC_ENCRYPTED_CONTENT" not in joined
    assert "inspect the synthetic directory" not in joined  # reasoning summary is thinking
    assert result.conversations[0].session_id == "11111111-1111-4111-8111-111111111111"
    assert result.stats.malformed_lines == 0  # the unknown record type is ignored, not an error


def test_codex_compaction_summary_is_skipped() -> None:
    result = read_file(
        "codex", "codex/agent-history/compaction-codex-session_with_compaction.jsonl"
    )
    user = texts(result, "user")
    assert user == [
        "Help me build the API endpoints",
        "Add the user CRUD endpoints",
        "Now add product endpoints",
        "Now add the authentication middleware",
    ]
    assert not any("Outstanding TODOs" in t for t in texts(result))
    assert len(all_turns(result)) == 9


def test_openclaw_session_unwraps_user_text_and_drops_gateway_notices() -> None:
    result = read_file("openclaw", "openclaw/8555a0a4-0b79-459d-939c-e17cdbbf4fe2.head16.jsonl")
    conversation = result.conversations[0]
    assert conversation.session_id == "8555a0a4-0b79-459d-939c-e17cdbbf4fe2"
    assert roles(conversation) == ["user", "user", "tool", "tool", "tool", "assistant"]
    assert texts(result, "user") == ["はくあ", "はくあ"]
    joined = "\n".join(texts(result))
    assert "untrusted metadata" not in joined
    assert "Agent failed before reply" not in joined  # gateway-injected notice
    assert "[[reply_to_current]]" not in joined
    assert conversation.turns[-1].text.startswith("や。はくあ、いい名前だね。")
    assert conversation.turns[2].text.startswith("# SOUL.md - Who You Are")


def test_chatgpt_export_walks_the_current_branch() -> None:
    result = read_file("chatgpt-export", "chatgpt-export/polylogue-native-conversation-v1.json")
    conversation = result.conversations[0]
    assert conversation.session_id == "chatgpt-fixture-conversation"
    assert conversation.title == "Privacy-safe ChatGPT native fixture"
    assert roles(conversation) == ["user", "tool", "assistant"]
    assert conversation.turns[0].text == "Analyze the attached fixture and create an artifact."
    assert conversation.turns[1].text == "Privacy-safe tool result."
    assert conversation.turns[2].text.startswith("Final answer.")
    joined = "\n".join(texts(result))
    for absent in ("Superseded answer", "reasoning trace", "reasoning summary", "fixture evidence"):
        assert absent not in joined
    assert conversation.turns[0].provenance.locator == "chatgpt-fixture-conversation/user-message"
    assert conversation.turns[0].provenance.lines == (0, 0)


def test_every_fixture_file_is_read_without_skips() -> None:
    formats = {"claude-code": CLAUDE, "codex": CODEX, "openclaw": FIXTURES / "openclaw"}
    formats["chatgpt-export"] = FIXTURES / "chatgpt-export"
    for fmt, folder in formats.items():
        result = read_once(make_reader(fmt, folder))
        assert result.skipped == [], fmt
        assert result.stats.malformed_lines == 0, fmt
        assert result.conversations, fmt
        for turn in all_turns(result):
            assert turn.timestamp.tzinfo is not None
            assert turn.timestamp.utcoffset() is not None
            assert turn.text.strip()
            assert turn.trusted == (turn.role != "tool")
