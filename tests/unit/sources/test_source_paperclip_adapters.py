"""Paperclip run logs of every adapter, read as each agent CLI prints them today."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.fakes.transcripts import DECOY, codex_exec_events, write_paperclip_run
from tests.support.shared_samples import SHARED_TRANSCRIPTS, requires_shared_transcripts
from tests.support.sources import all_turns, make_reader, read_once, texts

from memoryd.sources.paperclip_events import UNKNOWN

RUNS = SHARED_TRANSCRIPTS / "real" / "paperclip" / "run-logs" / "cmp_heldout"


def run_path(tmp_path: Path) -> Path:
    return tmp_path / "run-logs" / "company" / "agent" / "run-1.ndjson"


def test_a_codex_local_run_gives_its_messages_and_tool_output(tmp_path: Path) -> None:
    dialogue: list[Any] = [
        ("assistant", "Reading the spec first."),
        ("tool", "spec: ship on Friday"),
        ("assistant", "The spec says Friday."),
    ]
    path = write_paperclip_run(run_path(tmp_path), codex_exec_events(dialogue))
    result = read_once(make_reader("paperclip", tmp_path / "run-logs"))
    assert [(t.role, t.text, t.trusted) for t in all_turns(result)] == [
        ("assistant", "Reading the spec first.", True),
        ("tool", "spec: ship on Friday", False),
        ("assistant", "The spec says Friday.", True),
    ]
    assert not any(DECOY in text for text in texts(result))
    assert result.skipped == []
    assert result.conversations[0].session_id == path.name.removesuffix(".ndjson")


def test_claude_local_subagent_events_are_kept_apart_and_the_prompt_is_not_the_user(
    tmp_path: Path,
) -> None:
    task = "toolu_task_1"
    events: list[tuple[int, Any]] = [
        (0, {"type": "system", "subtype": "init", "session_id": "s"}),
        (0, {"type": "user", "message": {"role": "user", "content": "Plan the launch."}}),
        (
            1,
            {
                "type": "assistant",
                "message": {"id": "m1", "content": [{"type": "text", "text": "Delegating."}]},
            },
        ),
        (
            2,
            {
                "type": "user",
                "parent_tool_use_id": task,
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": "Find the launch date."}],
                },
            },
        ),
        (
            3,
            {
                "type": "assistant",
                "parent_tool_use_id": task,
                "message": {"id": "m2", "content": [{"type": "text", "text": "It is Friday."}]},
            },
        ),
        (
            4,
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": task, "content": "It is Friday."}
                    ],
                },
            },
        ),
        (
            5,
            {
                "type": "assistant",
                "message": {"id": "m3", "content": [{"type": "text", "text": "Launch is Friday."}]},
            },
        ),
        (
            5,
            {
                "type": "user",
                "message": {"role": "user", "content": "[Request interrupted by user]"},
            },
        ),
        (6, {"type": "result", "subtype": "success", "result": DECOY}),
    ]
    write_paperclip_run(run_path(tmp_path), events)
    result = read_once(make_reader("paperclip", tmp_path / "run-logs"))
    main, side = result.conversations
    assert [(t.role, t.text) for t in main.turns] == [
        ("user", "Plan the launch."),
        ("assistant", "Delegating."),
        ("tool", "It is Friday."),
        ("assistant", "Launch is Friday."),
    ]
    assert side.metadata == {"subagent": task}
    assert all(t.sidechain for t in side.turns)
    assert [t.role for t in side.turns] == ["assistant", "assistant"]
    assert "user" not in {t.role for t in side.turns}
    assert side.turns[0].text.endswith("Find the launch date.")


def test_gemini_opencode_and_pi_events_are_read(tmp_path: Path) -> None:
    events: list[tuple[int, Any]] = [
        (0, {"type": "init", "session_id": "g", "model": "gemini-2.5-pro"}),
        (0, {"type": "message", "role": "user", "content": "Which day?"}),
        (1, {"type": "message", "role": "assistant", "content": "Fri", "delta": True}),
        (1, {"type": "message", "role": "assistant", "content": "day.", "delta": True}),
        (2, {"type": "tool_use", "tool_name": "read", "tool_id": "t1", "parameters": {}}),
        (2, {"type": "tool_result", "tool_id": "t1", "status": "success", "output": "calendar"}),
        (3, {"type": "step_start", "part": {"type": "step-start"}}),
        (3, {"type": "text", "part": {"id": "p1", "type": "text", "text": "From opencode."}}),
        (
            4,
            {
                "type": "tool_use",
                "part": {"tool": "bash", "state": {"status": "completed", "output": "ls output"}},
            },
        ),
        (
            5,
            {
                "type": "message_end",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": DECOY},
                        {"type": "text", "text": "From pi."},
                    ],
                },
            },
        ),
        (
            6,
            {
                "type": "message_end",
                "message": {"role": "toolResult", "content": [{"type": "text", "text": "pi tool"}]},
            },
        ),
        (7, {"type": "result", "stats": {}}),
    ]
    write_paperclip_run(run_path(tmp_path), events)
    result = read_once(make_reader("paperclip", tmp_path / "run-logs"))
    assert [(t.role, t.text) for t in all_turns(result)] == [
        ("user", "Which day?"),
        ("assistant", "Friday."),
        ("tool", "calendar"),
        ("assistant", "From opencode."),
        ("tool", "ls output"),
        ("assistant", "From pi."),
        ("tool", "pi tool"),
    ]


def test_events_of_an_unknown_shape_are_logged_and_shown_never_silently_empty(
    tmp_path: Path,
) -> None:
    events: list[tuple[int, Any]] = [
        (0, {"type": "openclaw.reply", "text": "what an unknown adapter printed"}),
        (0, "plain text from the agent"),
        (1, {"type": "item.completed", "item": {"type": "future_item", "text": "x"}}),
    ]
    path = write_paperclip_run(run_path(tmp_path), events)
    reader = make_reader("paperclip", tmp_path / "run-logs")
    with capture_logs() as logs:
        result = read_once(reader)
    assert result.conversations == []
    skipped = {e["reason"]: e["records"] for e in logs if e["event"] == "source.skipped"}
    assert skipped == {
        f"{UNKNOWN} (type 'openclaw.reply')": 1,
        f"{UNKNOWN} (type 'item.completed')": 1,
        "stdout line that is not a JSON event": 1,
    }
    shown = reader.lag_report(result.cursors).skipped
    assert {(s.path, s.reason) for s in shown} == {
        (str(path), f"{UNKNOWN} (type 'openclaw.reply') (1 so far)"),
        (str(path), f"{UNKNOWN} (type 'item.completed') (1 so far)"),
        (str(path), "stdout line that is not a JSON event (1 so far)"),
    }


@requires_shared_transcripts
def test_the_real_codex_local_run_is_read() -> None:
    result = read_once(make_reader("paperclip", RUNS / "agent_codexcoder"))
    turns = all_turns(result)
    assert result.skipped == []
    assert [t.role for t in turns].count("assistant") == 6
    assert [t.role for t in turns].count("tool") == 7
    assert turns[0].text.startswith("I\u2019m starting with the Ironworks heartbeat procedure")
    assert turns[-1].text.startswith("Implemented the transcript UI refactor")
    assert not any("shared presentation layer" in t.text for t in turns)  # reasoning dropped


@requires_shared_transcripts
def test_the_real_claude_local_subagent_run_keeps_the_subagent_apart() -> None:
    result = read_once(make_reader("paperclip", RUNS / "agent_claudecoder" / SUBAGENT_RUN))
    by_subagent = {c.metadata.get("subagent"): c for c in result.conversations}
    assert set(by_subagent) == {None, "toolu_01Cz2Pnv7qNcnK1ZiocxWhQX"}
    main = by_subagent[None]
    side = by_subagent["toolu_01Cz2Pnv7qNcnK1ZiocxWhQX"]
    users = [t.text for t in main.turns if t.role == "user"]
    assert users[0].startswith("/handgemacht:create-beads websearch")
    assert users[1:] == ["create the beads"]
    assert not any("Draft bead content" in text for text in users)
    assert all(t.sidechain for t in side.turns)
    assert {t.role for t in side.turns} == {"assistant", "tool"}
    assert side.turns[0].text.startswith("(task given to a subagent)\nDraft bead content")
    assert not any(t.sidechain for t in main.turns)


SUBAGENT_RUN = "7d2f4e1a-6b0c-4c8e-9a41-3e5b2c9d0f17.ndjson"


@pytest.mark.parametrize("name", ["agent_claudecoder", "agent_codexcoder"])
@requires_shared_transcripts
def test_no_real_run_log_reads_as_nothing(name: str) -> None:
    result = read_once(make_reader("paperclip", RUNS / name))
    assert result.conversations
    assert all(c.turns for c in result.conversations)


def test_a_path_pattern_naming_the_agent_reads_only_its_runs(tmp_path: Path) -> None:
    mine = tmp_path / "run-logs" / "company-1" / "engineer" / "r1.ndjson"
    other = tmp_path / "run-logs" / "company-1" / "ceo" / "r2.ndjson"
    write_paperclip_run(mine, codex_exec_events([("assistant", "mine")]))
    write_paperclip_run(other, codex_exec_events([("assistant", "not mine")]))
    reader = make_reader("paperclip", str(tmp_path / "run-logs" / "*" / "engineer" / "*"))
    assert texts(read_once(reader)) == ["mine"]


@requires_shared_transcripts
def test_the_guide_s_pattern_finds_a_real_agent_s_runs() -> None:
    pattern = RUNS.parent / "*" / "agent_codexcoder" / "*"
    assert [Path(p).parent.name for p in make_reader("paperclip", str(pattern)).files()] == [
        "agent_codexcoder"
    ]


def test_the_counts_kept_for_status_stay_bounded(tmp_path: Path) -> None:
    events: list[tuple[int, Any]] = [(0, {"type": f"invented.{n}"}) for n in range(30)]
    write_paperclip_run(run_path(tmp_path), events)
    reader = make_reader("paperclip", tmp_path / "run-logs")
    result = read_once(reader)
    (cursor,) = result.cursors.values()
    counts = cursor.state["skipped"]
    assert len(counts) == 20
    assert sum(counts.values()) == 30
    assert counts["other reasons"] == 11


def test_the_envelopes_paperclip_s_own_parsers_read_are_read_too(tmp_path: Path) -> None:
    """Paperclip's gemini parser also takes `assistant`/`user` events with a string or `text`
    message, top-level `text` events and completed `tool_call` events; opencode prints
    `reasoning` events and pi a `session` header: none of them is dialogue lost or a shape
    memoryd does not know."""
    events: list[tuple[int, Any]] = [
        (0, {"type": "session", "id": "pi-1"}),
        (0, {"type": "user", "message": "Which room?"}),
        (1, {"type": "assistant", "message": {"text": "Room B."}}),
        (1, {"type": "thinking", "text": DECOY}),
        (1, {"type": "reasoning", "part": {"text": DECOY}}),
        (2, {"type": "tool_call", "subtype": "started", "tool_call": {"read": {"args": {}}}}),
        (
            2,
            {
                "type": "tool_call",
                "subtype": "completed",
                "tool_call": {"read": {"result": "booking sheet"}},
            },
        ),
        (3, {"type": "text", "text": "Booked."}),
        (3, {"type": "error", "message": "rate limited, retrying"}),
    ]
    write_paperclip_run(run_path(tmp_path), events)
    reader = make_reader("paperclip", tmp_path / "run-logs")
    with capture_logs() as logs:
        result = read_once(reader)
    assert [(t.role, t.text) for t in all_turns(result)] == [
        ("user", "Which room?"),
        ("assistant", "Room B."),
        ("tool", "booking sheet"),
        ("assistant", "Booked."),
    ]
    assert [e for e in logs if e["event"] == "source.skipped"] == []
    assert DECOY not in "".join(t.text for t in all_turns(result))
