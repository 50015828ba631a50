"""Format rules the shared samples do not cover, on small transcripts written in tmp_path."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.sources import all_turns, make_reader, read_once, read_until_done, texts


def write_lines(path: Path, entries: list[dict[str, Any]], *, mode: str = "w") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as handle:
        for entry in entries:
            handle.write(json.dumps(entry) + "\n")


def claude(
    uid: str, parent: str | None, kind: str, content: object, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if "message_id" in extra:
        message["id"] = extra.pop("message_id")
    return {
        "type": kind,
        "uuid": uid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s1",
        "timestamp": "2026-01-05T10:00:00Z",
        "message": message,
        **extra,
    }


# --- claude-code ----------------------------------------------------------------------------


def test_claude_assistant_lines_sharing_a_message_id_become_one_turn(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    write_lines(
        path,
        [
            claude("u1", None, "user", "Plan the launch"),
            claude(
                "a1", "u1", "assistant", [{"type": "thinking", "thinking": "hmm"}], message_id="m1"
            ),
            claude(
                "a2", "a1", "assistant", [{"type": "text", "text": "First part."}], message_id="m1"
            ),
            claude(
                "a3",
                "a2",
                "assistant",
                [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
                message_id="m1",
            ),
            claude(
                "a4", "a3", "assistant", [{"type": "text", "text": "Second part."}], message_id="m1"
            ),
            claude(
                "a5",
                "a4",
                "assistant",
                [{"type": "text", "text": "Next message."}],
                message_id="m2",
            ),
        ],
    )
    result = read_once(make_reader("claude-code", path))
    turns = all_turns(result)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "Plan the launch"),
        ("assistant", "First part.\n\nSecond part."),
        ("assistant", "Next message."),
    ]
    assert turns[1].provenance.lines == (3, 5)


def test_claude_drops_images_documents_and_the_tool_use_result_side_car(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO" * 50},
    }
    document = {"type": "document", "source": {"type": "base64", "data": "JVBERi0x" * 50}}
    write_lines(
        path,
        [
            claude("u1", None, "user", [{"type": "text", "text": "Look at this"}, image, document]),
            claude(
                "u2",
                "u1",
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "ok"}, image],
                    }
                ],
                toolUseResult={"stdout": "SIDECAR-ONLY", "originalFile": "SIDECAR-FILE"},
            ),
        ],
    )
    result = read_once(make_reader("claude-code", path))
    assert [(t.role, t.text, t.trusted) for t in all_turns(result)] == [
        ("user", "Look at this", True),
        ("tool", "ok", False),
    ]


def test_claude_compaction_summary_is_kept_when_the_file_starts_with_it(tmp_path: Path) -> None:
    path = tmp_path / "s2.jsonl"
    summary = claude("c1", None, "user", "Summary: the user wants a plan.", isCompactSummary=True)
    write_lines(path, [summary, claude("u1", "c1", "user", "Go on")])
    assert texts(read_once(make_reader("claude-code", path))) == [
        "Summary: the user wants a plan.",
        "Go on",
    ]


def test_claude_skips_tool_results_and_journal_files(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write_lines(project / "s1.jsonl", [claude("u1", None, "user", "main")])
    write_lines(
        project / "s1" / "subagents" / "journal.jsonl", [claude("j", None, "user", "journal")]
    )
    (project / "s1" / "tool-results").mkdir(parents=True)
    write_lines(project / "s1" / "tool-results" / "x.jsonl", [claude("t", None, "user", "spill")])
    sub = claude("g1", None, "user", "sub task")
    sub["isSidechain"] = True
    write_lines(project / "s1" / "subagents" / "agent-abc.jsonl", [sub])
    result = read_once(make_reader("claude-code", project))
    assert sorted(texts(result)) == ["main", "sub task"]
    subagent = next(c for c in result.conversations if c.metadata.get("subagent") == "abc")
    assert subagent.session_id == "s1"
    assert subagent.turns[0].sidechain is True


def test_claude_parallel_tool_results_that_fork_are_kept_but_rewinds_are_not(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s1.jsonl"

    def result(uid: str, parent: str, text: str) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": uid, "content": text}
        return claude(uid, parent, "user", [block])

    call = [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]
    write_lines(
        path,
        [
            claude("u1", None, "user", "Read both files"),
            claude("a1", "u1", "assistant", call, message_id="m1"),
            claude("a2", "a1", "assistant", call, message_id="m1"),
            result("r1", "a1", "first file"),  # hangs from its own call: a fork, not a rewind
            result("r2", "a2", "second file"),
            claude(
                "a3", "r2", "assistant", [{"type": "text", "text": "Both read."}], message_id="m2"
            ),
            claude("u0", None, "user", "A fresh first prompt"),  # a rewind to the first prompt
            claude("a0", "u0", "assistant", [{"type": "text", "text": "Starting over."}]),
        ],
    )
    assert texts(read_once(make_reader("claude-code", path))) == [
        "A fresh first prompt",
        "Starting over.",
    ]
    path.write_text("", encoding="utf-8")
    lines = path.parent / "kept.jsonl"
    write_lines(
        lines,
        [
            claude("u1", None, "user", "Read both files"),
            claude("a1", "u1", "assistant", call, message_id="m1"),
            claude("a2", "a1", "assistant", call, message_id="m1"),
            result("r1", "a1", "first file"),
            result("r2", "a2", "second file"),
            claude(
                "a3", "r2", "assistant", [{"type": "text", "text": "Both read."}], message_id="m2"
            ),
        ],
    )
    assert texts(read_once(make_reader("claude-code", lines))) == [
        "Read both files",
        "first file",
        "second file",
        "Both read.",
    ]


# --- codex ----------------------------------------------------------------------------------


def test_codex_subagent_rollout_is_attributed_to_its_parent_thread(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-01-02T03-04-05-22222222-2222-4222-8222-222222222222.jsonl"
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "parent-thread"}}}
    write_lines(
        path,
        [
            {
                "timestamp": "2026-01-02T03:04:05Z",
                "type": "session_meta",
                "payload": {"id": "child", "source": spawn},
            },
            {
                "timestamp": "2026-01-02T03:04:06Z",
                "type": "event_msg",
                "payload": {"type": "user_message", "message": "Find it"},
            },
            {
                "timestamp": "2026-01-02T03:04:06Z",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Find it"}],
                },
            },
        ],
    )
    result = read_once(make_reader("codex", path))
    assert [c.session_id for c in result.conversations] == ["parent-thread"]
    assert [(t.text, t.sidechain) for t in all_turns(result)] == [("Find it", True)]


# --- openclaw -------------------------------------------------------------------------------


def openclaw_message(
    uid: str, parent: str | None, role: str, text: str, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": uid,
        "parentId": parent,
        "timestamp": "2026-03-08T13:00:00Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}], **extra},
    }


def test_openclaw_drops_delivery_mirrors_abandoned_branches_and_archives(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    header = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-03-08T13:00:00Z"}
    write_lines(
        sessions / "sess-1.jsonl",
        [
            header,
            openclaw_message("m1", None, "user", "Hello"),
            openclaw_message("m2", "m1", "assistant", "Old reply"),
            openclaw_message("m3", "m1", "assistant", "New reply"),
            openclaw_message(
                "m4", "m3", "assistant", "New reply", provider="openclaw", model="delivery-mirror"
            ),
            openclaw_message("m5", "m4", "user", "[Sun 2026-03-08 22:03 GMT+9] Thanks"),
        ],
    )
    write_lines(
        sessions / "sess-0.jsonl.reset.2026-03-07T00-00-00Z",
        [openclaw_message("x", None, "user", "archived")],
    )
    result = read_once(make_reader("openclaw", sessions))
    assert [c.session_id for c in result.conversations] == ["sess-1"]
    assert texts(result) == ["Hello", "New reply", "Thanks"]


# --- paperclip ------------------------------------------------------------------------------


def stream_lines(events: list[dict[str, Any]], cut: int) -> list[dict[str, Any]]:
    """Render stream-JSON events as stdout and cut it into `cut`-character chunks."""
    stdout = "".join(json.dumps(event) + "\n" for event in events)
    return [
        {"ts": f"2026-02-01T09:00:{index:02d}Z", "stream": "stdout", "chunk": stdout[at : at + cut]}
        for index, at in enumerate(range(0, len(stdout), cut))
    ]


RUN_EVENTS: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "session_id": "cli-session"},
    {
        "type": "assistant",
        "message": {"id": "m1", "content": [{"type": "text", "text": "Checking the queue."}]},
    },
    {
        "type": "assistant",
        "message": {
            "id": "m1",
            "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}],
        },
    },
    {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": "3 jobs"}]},
    },
    {
        "type": "assistant",
        "message": {"id": "m2", "content": [{"type": "text", "text": "Three jobs are waiting."}]},
    },
    {"type": "result", "subtype": "success", "result": "Three jobs are waiting."},
]


def test_paperclip_joins_unaligned_chunks_and_reads_the_stream_json(tmp_path: Path) -> None:
    path = tmp_path / "company" / "agent" / "run-1.ndjson"
    lines = stream_lines(RUN_EVENTS, cut=37)
    lines.insert(2, {"ts": "2026-02-01T09:00:01Z", "stream": "stderr", "chunk": "warning: noise\n"})
    write_lines(path, lines)
    result = read_once(make_reader("paperclip", tmp_path))
    assert [c.session_id for c in result.conversations] == ["run-1"]
    assert [(t.role, t.text) for t in all_turns(result)] == [
        ("assistant", "Checking the queue."),
        ("tool", "3 jobs"),
        ("assistant", "Three jobs are waiting."),
    ]
    # the line began in the second chunk, so it carries that chunk's time
    assert all_turns(result)[0].timestamp == datetime(2026, 2, 1, 9, 0, 1, tzinfo=UTC)


def test_paperclip_log_replaced_by_its_gzip_is_not_read_twice(tmp_path: Path) -> None:
    folder = tmp_path / "run-logs"
    plain = folder / "run-7.ndjson"
    lines = stream_lines(RUN_EVENTS, cut=50)
    write_lines(plain, lines[: len(lines) // 2])
    reader = make_reader("paperclip", folder)
    first = read_once(reader)
    write_lines(plain, lines[len(lines) // 2 :], mode="a")
    # Finalized: gzipped, then the plain log unlinked; one heartbeat sees both, the next only .gz
    data = plain.read_bytes()
    gz = folder / "run-7.ndjson.gz"
    gz.write_bytes(gzip.compress(data))
    both = read_once(reader, first.cursors)
    plain.unlink()
    after = read_once(reader, both.cursors)
    again = read_once(reader, after.cursors)
    yielded = texts(first) + texts(both) + texts(after) + texts(again)
    assert yielded == ["Checking the queue.", "3 jobs", "Three jobs are waiting."]
    assert after.stats.files_moved == 1
    assert list(after.cursors) == [str(gz)]
    assert reader.lag(after.cursors) == {str(gz): 0}


# --- chatgpt-export ---------------------------------------------------------------------------


def conversation(
    cid: str, updated: float, messages: list[tuple[str, str, float]]
) -> dict[str, Any]:
    mapping: dict[str, Any] = {
        "root": {"id": "root", "message": None, "parent": None, "children": []}
    }
    parent = "root"
    for index, (role, text, created) in enumerate(messages):
        node = f"{cid}-n{index}"
        mapping[parent]["children"].append(node)
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "id": node,
                "author": {"role": role},
                "create_time": created,
                "recipient": "all",
                "content": {"content_type": "text", "parts": [text]},
            },
        }
        parent = node
    return {
        "id": cid,
        "title": cid,
        "create_time": messages[0][2],
        "update_time": updated,
        "current_node": parent,
        "mapping": mapping,
    }


def test_chatgpt_reexport_yields_only_new_and_changed_conversations(tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    base = 1_780_000_000.0
    one = conversation("c1", base + 10, [("user", "Hi", base), ("assistant", "Hello", base + 10)])
    two = conversation("c2", base + 20, [("user", "Plan?", base + 20)])
    export.write_text(json.dumps([one, two]), encoding="utf-8")
    reader = make_reader("chatgpt-export", export)
    first = read_once(reader)
    assert texts(first) == ["Hi", "Hello", "Plan?"]
    unchanged = read_once(reader, first.cursors)
    assert unchanged.conversations == []
    # Re-exported whole (a new file replaces the old one): c2 grew, c3 is new, c1 is the same
    two = conversation(
        "c2", base + 40, [("user", "Plan?", base + 20), ("assistant", "Yes.", base + 40)]
    )
    three = conversation("c3", base + 50, [("user", "New topic", base + 50)])
    replacement = tmp_path / "new.json"
    replacement.write_text(json.dumps([one, two, three], indent=1), encoding="utf-8")
    replacement.replace(export)
    second = read_once(reader, first.cursors)
    assert [(c.session_id, [t.text for t in c.turns]) for c in second.conversations] == [
        ("c2", ["Yes."]),
        ("c3", ["New topic"]),
    ]


def test_chatgpt_export_is_read_in_budgeted_pieces_and_first_sight_skips_old(
    tmp_path: Path,
) -> None:
    export = tmp_path / "conversations.json"
    base = 1_780_000_000.0
    items = [
        conversation(f"c{i:03d}", base + i * 100, [("user", f"message {i}", base + i * 100)])
        for i in range(60)
    ]
    export.write_text(json.dumps(items), encoding="utf-8")
    reader = make_reader("chatgpt-export", export)
    since = datetime.fromtimestamp(base + 20 * 100, UTC)
    collected: list[str] = []
    result = read_once(reader, since=since, first_sight=True, max_bytes=2000)
    collected += texts(result)
    rounds = 1
    while result.more:
        result = read_once(reader, result.cursors, first_sight=False, max_bytes=2000)
        collected += texts(result)
        rounds += 1
    assert rounds > 3
    assert collected == [f"message {i}" for i in range(20, 60)]


# --- jsonl ----------------------------------------------------------------------------------


def test_jsonl_reads_strings_and_content_blocks(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_lines(
        path,
        [
            {"role": "system", "content": "You are helpful", "timestamp": "2026-01-01T00:00:00Z"},
            {
                "role": "user",
                "content": "What is up?",
                "timestamp": "2026-01-01T00:00:01Z",
                "session_id": "chat-9",
            },
            {
                "role": "assistant",
                "timestamp": "2026-01-01T00:00:02Z",
                "session_id": "chat-9",
                "content": [
                    {"type": "thinking", "thinking": "secret thoughts"},
                    {"type": "text", "text": "All good."},
                    {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                ],
            },
            {
                "role": "user",
                "timestamp": 1767225603000,
                "session_id": "chat-9",
                "content": [{"type": "tool_result", "tool_use_id": "x", "content": "exit 0"}],
            },
            {
                "role": "tool",
                "content": "raw output",
                "timestamp": "2026-01-01T00:00:04",
                "session_id": "chat-9",
            },
        ],
    )
    result = read_once(make_reader("jsonl", path))
    assert [c.session_id for c in result.conversations] == ["chat-9"]
    turns = all_turns(result)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "What is up?"),
        ("assistant", "All good."),
        ("tool", "exit 0"),
        ("tool", "raw output"),
    ]
    assert turns[2].timestamp == datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC)
    assert turns[3].timestamp == datetime(2026, 1, 1, 0, 0, 4, tzinfo=UTC)


# --- markdown -------------------------------------------------------------------------------


def test_markdown_sections_prefix_lines_and_times(tmp_path: Path) -> None:
    path = tmp_path / "export.md"
    path.write_text(
        "# Session: 2026-02-26 07:49:00\n"
        "- **Session ID**: chat-42\n\n"
        "### User\n> 2026-02-26T08:00:00Z\n\nPlease plan the launch.\nIt is in March.\n\n"
        "### Assistant\n\nMoved the launch to March.\n"
        "user: one more thing\n"
        "assistant: yes?\n   continued line\n",
        encoding="utf-8",
    )
    result = read_once(make_reader("markdown", path))
    assert [c.session_id for c in result.conversations] == ["chat-42"]
    turns = all_turns(result)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "Please plan the launch.\nIt is in March."),
        ("assistant", "Moved the launch to March."),
        ("user", "one more thing"),
        ("assistant", "yes?\n   continued line"),
    ]
    assert turns[0].timestamp == datetime(2026, 2, 26, 8, 0, tzinfo=UTC)
    assert turns[0].provenance.lines == (7, 8)


def test_markdown_without_times_takes_the_date_in_its_file_name(tmp_path: Path) -> None:
    dated = tmp_path / "2026-01-15-standup.md"
    dated.write_text("### User\nhello\n\n### Assistant\nhi\n", encoding="utf-8")
    turns = all_turns(read_once(make_reader("markdown", dated)))
    assert [t.timestamp for t in turns] == [datetime(2026, 1, 15, 12, 0, tzinfo=UTC)] * 2
    # An explicit time in the text still wins over the name.
    timed = tmp_path / "2026-01-15-timed.md"
    timed.write_text("### User\n> 2026-01-16T09:30:00Z\n\nhello\n", encoding="utf-8")
    [turn] = all_turns(read_once(make_reader("markdown", timed)))
    assert turn.timestamp == datetime(2026, 1, 16, 9, 30, tzinfo=UTC)
    # Not a date: the file's modification time, as before.
    undated = tmp_path / "2026-13-45-notes.md"
    undated.write_text("user: hello\n", encoding="utf-8")
    written = datetime(2025, 6, 1, 8, 0, tzinfo=UTC).timestamp()
    os.utime(undated, (written, written))
    [turn] = all_turns(read_once(make_reader("markdown", undated)))
    assert turn.timestamp == datetime(2025, 6, 1, 8, 0, tzinfo=UTC)


def test_markdown_message_appended_across_reads_keeps_its_role(tmp_path: Path) -> None:
    path = tmp_path / "chat.md"
    path.write_text("user: start\nassistant: first half\n", encoding="utf-8")
    reader = make_reader("markdown", path)
    first = read_once(reader)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("second half\nuser: next\n")
    second = read_once(reader, first.cursors)
    assert [(t.role, t.text) for t in all_turns(first)] == [
        ("user", "start"),
        ("assistant", "first half"),
    ]
    assert [(t.role, t.text) for t in all_turns(second)] == [
        ("assistant", "second half"),
        ("user", "next"),
    ]


def test_chatgpt_resume_offsets_are_bytes_even_with_multibyte_text(tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    base = 1_780_000_000.0
    items = [
        conversation(
            f"c{i}", base + i, [("user", f"ünïcödé 日本語 {i} " + "ß" * (i * 50), base + i)]
        )
        for i in range(25)
    ]
    # One conversation bigger than the parser's read block, to cross block boundaries
    items.append(conversation("huge", base + 99, [("user", "€" * 700_000, base + 99)]))
    export.write_text(json.dumps(items, ensure_ascii=False, indent=1), encoding="utf-8")
    reader = make_reader("chatgpt-export", export)
    collected, _, reads = read_until_done(reader, max_bytes=3000)
    assert reads > 5
    assert collected[:25] == [f"ünïcödé 日本語 {i} " + "ß" * (i * 50) for i in range(25)]
    assert collected[25] == "€" * 700_000
    assert len(collected) == 26
