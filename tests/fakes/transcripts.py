"""Fake agents: a short dialogue written as each transcript format's agent writes it on disk.

The project's own samples, one writer per format of `memoryd.sources.registry.FORMATS`, so that
every format is tested without the shared real samples (`tests.support.shared_samples`). Each writer
takes the dialogue a reader must return — (role, text) pairs, turn `i` said at `moment(i)` — and
writes it in the format's real layout, wrapped in the records that format's reader must not
return: thinking, tool calls, scaffolding, display mirrors, abandoned branches, compaction
summaries, archives. Every such record holds `DECOY`, so a test can assert that none leaked.
The shapes follow the research notes on transcript formats and the readers' module docstrings.

A writer returns the path to configure as the source (a file or a folder). Dialogues start with
a user turn; markdown has no tool turns (`SyntheticFormat.tool_turns`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

from memoryd.sources.model import Role

Said = tuple[Role, str]
Writer = Callable[[Path, Sequence[Said]], Path]

DECOY = "DECOY"
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)  # a Sunday, which OpenClaw's stamps spell out
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # not %a: that follows the locale


def moment(index: int) -> datetime:
    """When turn `index` of a synthetic dialogue is said."""
    return START + timedelta(minutes=index)


def iso(index: int) -> str:
    return moment(index).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch(index: int) -> float:
    return moment(index).timestamp()


def write_lines(path: Path, entries: Sequence[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
    path.write_text(text, encoding="utf-8")


def _ids(prefix: str) -> Iterator[str]:
    return (f"{prefix}{number}" for number in count(1))


# --- claude-code ----------------------------------------------------------------------------

CLAUDE_SESSION = "5e551011-0000-4000-8000-000000000001"


def write_claude_code(folder: Path, dialogue: Sequence[Said]) -> Path:
    """`<project>/<session>.jsonl`; the project folder is the source."""
    project = folder / "claude" / "projects" / "-home-user-launch"
    uuids, message_ids = _ids("u"), _ids("msg_")
    lines: list[dict[str, Any]] = [{"type": "summary", "summary": DECOY, "leafUuid": "elsewhere"}]
    parent: str | None = None

    def add(kind: str, content: object, index: int, **extra: Any) -> dict[str, Any]:
        nonlocal parent
        uid = next(uuids)
        message: dict[str, Any] = {"role": kind, "content": content}
        if "message_id" in extra:
            message["id"] = extra.pop("message_id")
        entry = {
            "type": kind,
            "uuid": uid,
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/user/launch",
            "sessionId": CLAUDE_SESSION,
            "version": "2.1.0",
            "timestamp": iso(index),
            "message": message,
            **extra,
        }
        lines.append(entry)
        parent = uid
        return entry

    # A prompt and answer the user rewound: the dialogue below restarts from the first prompt.
    add("user", f"{DECOY} abandoned prompt", 0)
    add("assistant", [{"type": "text", "text": DECOY}], 0, message_id=next(message_ids))
    parent = None
    for index, (role, text) in enumerate(dialogue):
        if role == "user":
            add("user", text, index)
            if index == 0:
                caveat = f"<local-command-caveat>{DECOY}</local-command-caveat>"
                add("user", caveat, index, isMeta=True)
        elif role == "assistant":
            message_id = next(message_ids)  # one line per content block, one message id
            thinking = {"type": "thinking", "thinking": DECOY, "signature": DECOY}
            add("assistant", [thinking], index, message_id=message_id)
            add("assistant", [{"type": "text", "text": text}], index, message_id=message_id)
        else:
            call = {"type": "tool_use", "id": f"toolu_{index}", "name": "Bash", "input": {}}
            add("assistant", [call], index, message_id=next(message_ids))
            result = {"type": "tool_result", "tool_use_id": f"toolu_{index}", "content": text}
            add("user", [result], index, toolUseResult={"stdout": DECOY})
        lines.append({"type": "file-history-snapshot", "messageId": parent, "snapshot": {}})
    write_lines(project / f"{CLAUDE_SESSION}.jsonl", lines)
    # Claude Code's compaction runs as a pseudo-subagent: its prompt and summary are not dialogue.
    compaction = {
        "isSidechain": True,
        "agentId": "acompact-5e5510",
        "sessionId": CLAUDE_SESSION,
        "timestamp": iso(len(dialogue) - 1),
    }
    write_lines(
        project / CLAUDE_SESSION / "subagents" / "agent-acompact-5e5510.jsonl",
        [
            {
                "type": "user",
                "uuid": "c1",
                "parentUuid": None,
                "message": {"role": "user", "content": f"{DECOY} summarise the conversation"},
                **compaction,
            },
            {
                "type": "assistant",
                "uuid": "c2",
                "parentUuid": "c1",
                "message": {"id": "msg_c", "content": [{"type": "text", "text": DECOY}]},
                **compaction,
            },
        ],
    )
    return project


# --- codex ----------------------------------------------------------------------------------

CODEX_SESSION = "019c0000-0000-7000-8000-000000000002"


def write_codex(folder: Path, dialogue: Sequence[Said]) -> Path:
    """`sessions/YYYY/MM/DD/rollout-<local time>-<session>.jsonl`; `sessions` is the source."""
    sessions = folder / "codex" / "sessions"
    path = sessions / "2026/03/01" / f"rollout-2026-03-01T10-00-00-{CODEX_SESSION}.jsonl"

    def line(kind: str, index: int, **payload: Any) -> dict[str, Any]:
        return {"timestamp": iso(index), "type": kind, "payload": payload}

    def message(role: str, block: str, text: str, index: int) -> dict[str, Any]:
        content = [{"type": block, "text": text}]
        return line("response_item", index, type="message", role=role, content=content)

    lines = [
        line(
            "session_meta",
            0,
            id=CODEX_SESSION,
            timestamp=iso(0),
            cwd="/home/user/launch",
            originator="codex_cli_rs",
            cli_version="0.140.0",
            source="cli",
            base_instructions={"text": DECOY},
        ),
        line("turn_context", 0, cwd="/home/user/launch", model="gpt-5", summary="auto"),
        message("developer", "input_text", f"<permissions instructions>{DECOY}", 0),
        message("user", "input_text", f"<environment_context>{DECOY}</environment_context>", 0),
    ]
    for index, (role, text) in enumerate(dialogue):
        if role == "user":
            lines.append(message("user", "input_text", text, index))
            lines.append(line("event_msg", index, type="user_message", message=text))
        elif role == "assistant":
            summary = [{"type": "summary_text", "text": DECOY}]
            reasoning = {"type": "reasoning", "summary": summary, "encrypted_content": DECOY}
            lines.append(line("response_item", index, **reasoning))
            lines.append(message("assistant", "output_text", text, index))
            lines.append(line("event_msg", index, type="agent_message", message=text))
        else:
            call = f"call_{index}"
            arguments = json.dumps({"command": ["ls"]})
            function_call = {"name": "shell", "arguments": arguments, "call_id": call}
            lines.append(line("response_item", index, type="function_call", **function_call))
            output = {"call_id": call, "output": text}
            lines.append(line("response_item", index, type="function_call_output", **output))
            lines.append(line("event_msg", index, type="exec_command_end", aggregated_output=text))
        lines.append(line("event_msg", index, type="token_count", info=None))
    lines.append(line("compacted", len(dialogue) - 1, message=DECOY))
    write_lines(path, lines)
    return sessions


# --- openclaw -------------------------------------------------------------------------------

OPENCLAW_SESSION = "0c1a0000-0000-4000-8000-000000000003"


def gateway_envelope(index: int, text: str, *, stamp: bool = True) -> str:
    """User text as a gateway wraps it today: conversation info, sender metadata, then the
    local time it was sent (GMT+9 here). Without `stamp`, only the conversation info's
    `timestamp` (UTC, as Telegram's is) says when."""
    local = moment(index) + timedelta(hours=9)
    when = f"[{_WEEKDAYS[local.weekday()]} {local:%Y-%m-%d %H:%M} GMT+9] " if stamp else ""
    utc = moment(index)
    info = {
        "message_id": str(3000 + index),
        "sender_id": DECOY,
        "conversation_label": f"{DECOY} id:-100389",
        "timestamp": f"{_WEEKDAYS[utc.weekday()]} {utc:%Y-%m-%d %H:%M} UTC",
        "is_group_chat": True,
    }
    sender = {"label": DECOY, "id": "72916257", "username": DECOY}
    return (
        f"Conversation info (untrusted metadata):\n```json\n{json.dumps(info, indent=2)}\n```\n\n"
        f"Sender (untrusted metadata):\n```json\n{json.dumps(sender, indent=2)}\n```\n\n"
        f"{when}{text}"
    )


def write_openclaw(folder: Path, dialogue: Sequence[Said]) -> Path:
    """`agents/<agent>/sessions/<session>.jsonl`; the sessions folder is the source."""
    sessions = folder / "openclaw" / "agents" / "main" / "sessions"
    ids = _ids("e")
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": OPENCLAW_SESSION, "timestamp": iso(0)}
    ]
    parent: str | None = None

    def entry(kind: str, index: int, **fields: Any) -> str:
        nonlocal parent
        uid = next(ids)
        lines.append(
            {
                "type": kind,
                "id": uid,
                "parentId": parent,
                "timestamp": iso(index),
                **fields,
            }
        )
        parent = uid
        return uid

    def assistant(index: int, content: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        fields.setdefault("provider", "anthropic")
        fields.setdefault("model", "claude-sonnet-4-5")
        return {"role": "assistant", "content": content, "stopReason": "stop", **fields}

    entry("model_change", 0, provider="anthropic", modelId="claude-sonnet-4-5")
    regenerated = False
    for index, (role, text) in enumerate(dialogue):
        if role == "user":
            content = [{"type": "text", "text": gateway_envelope(index, text)}]
            entry("message", index, message={"role": "user", "content": content})
        elif role == "assistant":
            if not regenerated:  # the first answer was regenerated: its old branch is dropped
                regenerated = True
                prompt = parent
                entry("message", index, message=assistant(index, [{"type": "text", "text": DECOY}]))
                parent = prompt
            thinking = {"type": "thinking", "thinking": DECOY, "thinkingSignature": DECOY}
            reply = {"type": "text", "text": f"[[reply_to_current]] {text}"}
            entry("message", index, message=assistant(index, [thinking, reply]))
            mirror = assistant(
                index,
                [{"type": "text", "text": text}],
                provider="openclaw",
                model="delivery-mirror",
            )
            entry("message", index, message=mirror)
        else:
            call = {"type": "toolCall", "id": f"call_{index}", "name": "read", "arguments": {}}
            entry("message", index, message=assistant(index, [call], stopReason="toolUse"))
            result = {
                "role": "toolResult",
                "toolCallId": f"call_{index}",
                "toolName": "read",
                "content": [{"type": "text", "text": text}],
                "isError": False,
            }
            entry("message", index, message=result)
    entry("custom", len(dialogue) - 1, customType="model-snapshot", data={"note": DECOY})
    write_lines(sessions / f"{OPENCLAW_SESSION}.jsonl", lines)
    reset = {"type": "session", "version": 3, "id": DECOY, "timestamp": iso(0)}
    archived = {"role": "user", "content": [{"type": "text", "text": DECOY}]}
    write_lines(
        sessions / "0c1a0000-0000-4000-8000-000000000000.jsonl.reset.2026-02-28T04-00-00.000Z",
        [reset, {"type": "message", "id": "a1", "parentId": None, "message": archived}],
    )
    # OpenClaw 2026.4+ writes a run trace beside every session; it repeats the prompts.
    trace = {"traceSchema": "openclaw-trajectory", "schemaVersion": 1, "ts": iso(0)}
    write_lines(
        sessions / f"{OPENCLAW_SESSION}.trajectory.jsonl",
        [
            {**trace, "type": "session.started", "seq": 1, "sessionId": OPENCLAW_SESSION},
            {**trace, "type": "message", "id": "t1", "seq": 2, "message": archived},
        ],
    )
    return sessions


# --- paperclip ------------------------------------------------------------------------------

PAPERCLIP_RUN = "7e570000-0000-4000-8000-000000000004"


def write_paperclip(folder: Path, dialogue: Sequence[Said]) -> Path:
    """`run-logs/<company>/<agent>/<run>.ndjson`; `run-logs` is the source.

    Stdout is the agent CLI's stream-JSON, cut into chunks that end mid-line, as process output
    arrives; every event's first chunk carries the time of the turn it belongs to.
    """
    run_logs = folder / "paperclip" / "instances" / "default" / "data" / "run-logs"
    message_ids = _ids("msg_")
    chunks: list[dict[str, Any]] = []

    def chunk(index: int, stream: str, text: str) -> None:
        chunks.append(
            {
                "ts": iso(index),
                "attemptId": "a-1",
                "stream": stream,
                "chunk": text,
                "seq": len(chunks),
            }
        )

    def event(index: int, value: Mapping[str, Any]) -> None:
        text = json.dumps(value, ensure_ascii=False) + "\n"
        middle = len(text) // 2
        chunk(index, "stdout", text[:middle])
        chunk(index, "stdout", text[middle:])

    chunk(0, "stderr", f"[paperclip] {DECOY} skipping saved session resume\n")
    event(0, {"type": "system", "subtype": "init", "session_id": "cli-session", "tools": []})
    chunk(0, "stdout", f"{DECOY}: plain process output, not an event\n")
    for index, (role, text) in enumerate(dialogue):
        if role == "user":
            event(index, {"type": "user", "message": {"role": "user", "content": text}})
        elif role == "assistant":
            message_id = next(message_ids)  # one event per content block, one message id
            thinking = {"type": "thinking", "thinking": DECOY}
            event(
                index, {"type": "assistant", "message": {"id": message_id, "content": [thinking]}}
            )
            block = {"type": "text", "text": text}
            event(index, {"type": "assistant", "message": {"id": message_id, "content": [block]}})
        else:
            call = {"type": "tool_use", "id": f"toolu_{index}", "name": "Bash", "input": {}}
            event(
                index,
                {"type": "assistant", "message": {"id": next(message_ids), "content": [call]}},
            )
            result = {"type": "tool_result", "tool_use_id": f"toolu_{index}", "content": text}
            event(index, {"type": "user", "message": {"role": "user", "content": [result]}})
    last = len(dialogue) - 1
    event(last, {"type": "result", "subtype": "success", "result": DECOY})
    chunk(last, "system", f"[paperclip] {DECOY} run finished\n")
    write_lines(run_logs / "company-1" / "agent-1" / f"{PAPERCLIP_RUN}.ndjson", chunks)
    return run_logs


def write_paperclip_run(path: Path, events: Sequence[tuple[int, Mapping[str, Any] | str]]) -> Path:
    """A Paperclip run log of any adapter: each (turn index, stdout event) is written as the
    process printed it, one JSON line (or a plain text line) cut into two unaligned chunks, after
    Paperclip's own stderr notice."""
    chunks: list[dict[str, Any]] = [
        {"ts": iso(0), "stream": "stderr", "chunk": f"[paperclip] {DECOY} resume skipped\n"}
    ]
    for index, value in events:
        text = (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)) + "\n"
        middle = len(text) // 2
        for piece in (text[:middle], text[middle:]):
            chunks.append(
                {"ts": iso(index), "stream": "stdout", "chunk": piece, "seq": len(chunks)}
            )
    write_lines(path, chunks)
    return path


def codex_exec_events(dialogue: Sequence[Said]) -> list[tuple[int, Mapping[str, Any]]]:
    """`codex exec --json` stdout (Paperclip's codex_local adapter) for a dialogue without user
    turns (the prompt is the command's argument): agent messages and command executions, with
    the reasoning and lifecycle events the reader must not return."""
    events: list[tuple[int, Mapping[str, Any]]] = [
        (0, {"type": "thread.started", "thread_id": "thread-1"}),
        (0, {"type": "turn.started"}),
    ]
    for index, (role, text) in enumerate(dialogue):
        item_id = f"item_{index}"
        if role == "assistant":
            reasoning = {"id": f"r{index}", "type": "reasoning", "text": DECOY}
            events.append((index, {"type": "item.completed", "item": reasoning}))
            message = {"id": item_id, "type": "agent_message", "text": text}
            events.append((index, {"type": "item.completed", "item": message}))
        elif role == "tool":
            started = {"id": item_id, "type": "command_execution", "command": DECOY}
            events.append((index, {"type": "item.started", "item": started}))
            done = {**started, "aggregated_output": text, "exit_code": 0, "status": "completed"}
            events.append((index, {"type": "item.completed", "item": done}))
        else:
            raise ValueError("codex exec --json has no user turns")
    events.append((len(dialogue), {"type": "turn.completed", "usage": {"input_tokens": 1}}))
    return events


# --- chatgpt-export -------------------------------------------------------------------------

CHATGPT_CONVERSATION = "c6a70000-0000-4000-8000-000000000005"


CHATGPT_CITATION = " \ue200filecite\ue202turn0file0\ue201"


def write_chatgpt_export(folder: Path, dialogue: Sequence[Said]) -> Path:
    """The export's `conversations.json`, the file itself being the source."""
    node_ids = _ids("node-")
    root = "client-created-root"
    mapping: dict[str, dict[str, Any]] = {
        root: {"id": root, "message": None, "parent": None, "children": []}
    }
    leaf = root

    def node(
        author: Mapping[str, Any], content: Mapping[str, Any], index: int, **fields: Any
    ) -> str:
        nonlocal leaf
        uid = next(node_ids)
        metadata = fields.pop("metadata", {})
        message = {
            "id": uid,
            "author": {"metadata": {}, **author},
            "create_time": epoch(index),
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "recipient": fields.pop("recipient", "all"),
            "metadata": metadata,
        }
        mapping[uid] = {"id": uid, "message": message, "parent": leaf, "children": []}
        mapping[leaf]["children"].append(uid)
        leaf = uid
        return uid

    def text(parts: list[str]) -> dict[str, Any]:
        return {"content_type": "text", "parts": parts}

    hidden = {"is_visually_hidden_from_conversation": True}
    node({"role": "system"}, text([DECOY]), 0, metadata=hidden)
    context = {"content_type": "user_editable_context", "user_profile": DECOY}
    node({"role": "user"}, context, 0, metadata=hidden)
    edited = False
    for index, (role, said) in enumerate(dialogue):
        if role == "user":
            if not edited:  # the first prompt was edited: the old one is a branch left behind
                edited = True
                before = leaf
                node({"role": "user"}, text([f"{DECOY} prompt before the edit"]), index)
                leaf = before
            node({"role": "user"}, text([said]), index)
        elif role == "assistant":
            thought = {"summary": DECOY, "content": DECOY, "chunks": [], "finished": True}
            thoughts = {"content_type": "thoughts", "thoughts": [thought]}
            node({"role": "assistant"}, thoughts, index)
            recap = {"content_type": "reasoning_recap", "content": f"{DECOY}: thought for 3s"}
            node({"role": "assistant"}, recap, index)
            # GPT-5 Pro's reasoning summary comes as a tool message of its own
            summary = {"initial_text": "Reasoning", "finished_text": "Reasoned for 5m 6s"}
            node({"role": "tool", "name": "a8km123"}, text([DECOY]), index, metadata=summary)
            node({"role": "assistant"}, text([""]), index)  # the placeholder before the answer
            # a private-use citation marker, as the answer cites an uploaded file
            node({"role": "assistant"}, text([said + CHATGPT_CITATION]), index)
        else:
            code = {"content_type": "code", "language": "unknown", "text": DECOY}
            node({"role": "assistant"}, code, index, recipient="python")
            output = {"content_type": "execution_output", "text": said}
            node({"role": "tool", "name": "python"}, output, index)
    conversation = {
        "id": CHATGPT_CONVERSATION,
        "conversation_id": CHATGPT_CONVERSATION,
        "title": "Spring launch",
        "create_time": epoch(0),
        "update_time": epoch(len(dialogue) - 1),
        "current_node": leaf,
        "mapping": mapping,
        "is_archived": False,
        "default_model_slug": "gpt-5",
    }
    path = folder / "chatgpt" / "conversations.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([conversation], ensure_ascii=False, indent=1), encoding="utf-8")
    return path


# --- jsonl ----------------------------------------------------------------------------------

JSONL_SESSION = "jsonl-session-6"


def write_jsonl(folder: Path, dialogue: Sequence[Said]) -> Path:
    """One `{role, content, timestamp}` object a line; the log folder is the source."""
    logs = folder / "jsonl-logs"
    lines: list[dict[str, Any]] = [{"role": "system", "content": DECOY, "timestamp": iso(0)}]
    for index, (role, text) in enumerate(dialogue):
        common = {"timestamp": iso(index), "session_id": JSONL_SESSION}
        if role == "user":
            lines.append({"role": "user", "content": text, **common})
        elif role == "assistant":
            blocks = [
                {"type": "thinking", "thinking": DECOY},
                {"type": "text", "text": text},
                {"type": "image", "source": {"type": "base64", "data": DECOY}},
            ]
            lines.append({"role": "assistant", "content": blocks, **common})
        else:
            call = {"type": "tool_use", "id": f"t{index}", "name": "search", "input": {}}
            lines.append({"role": "assistant", "content": [call], **common})
            result = {"type": "tool_result", "tool_use_id": f"t{index}", "content": text}
            lines.append({"role": "user", "content": [result], **common})
    write_lines(logs / "agent.jsonl", lines)
    return logs


# --- markdown -------------------------------------------------------------------------------

MARKDOWN_SESSION = "markdown-session-7"


def write_markdown(folder: Path, dialogue: Sequence[Said]) -> Path:
    """`### User` / `### Assistant` sections dated by `> time` lines; the file is the source."""
    sections = [
        f"# Session: {moment(0):%Y-%m-%d %H:%M:%S}\n",
        f"- **Session ID**: {MARKDOWN_SESSION}\n",
        f"- **Source**: {DECOY} preamble, not dialogue\n\n",
    ]
    for index, (role, text) in enumerate(dialogue):
        if role == "tool":
            raise ValueError("markdown transcripts have no tool turns")
        heading = "User" if role == "user" else "Assistant"
        sections.append(f"### {heading}\n> {iso(index)}\n\n{text}\n\n")
    path = folder / "markdown" / "2026-03-01-launch.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(sections), encoding="utf-8")
    return path


def write_aider_history(folder: Path, dialogue: Sequence[Said]) -> Path:
    """A repository's `.aider.chat.history.md`: a session aider only started (notices, a command
    interrupted), then one holding the dialogue, with the notices, commands and echoes around it
    that the reader must not return. The first user turn is given with `/ask`, echoed by aider.
    Times are whole minutes of START: aider dates only its sessions."""
    lines = [
        f"# aider chat started at {moment(0) - timedelta(days=1):%Y-%m-%d %H:%M:%S}",
        "",
        f"> {DECOY} Add .aider* to .gitignore (recommended)? (Y)es/(N)o [Yes]: n  ",
        "> Aider v0.86.1  ",
        "",
        f"#### /add {DECOY}.py  ",
        "> ^C KeyboardInterrupt  ",
        "",
        f"# aider chat started at {moment(0):%Y-%m-%d %H:%M:%S}",
        "",
        f"> Main model: {DECOY}  ",
        "",
    ]
    asked = False
    for role, text in dialogue:
        if role == "user":
            first, *rest = text.split("\n")
            command = "" if asked else "/ask "
            lines.append(f"#### {command}{first}  ")
            lines.extend(f"#### {more}  " for more in rest)
            if not asked:
                asked = True
                lines.extend(f"#### {piece}  " for piece in text.split("\n"))  # the echo
            lines.append("")
        elif role == "assistant":
            lines.extend([text, "", f"> Tokens: {DECOY} sent, 1k received.  ", ""])
        else:
            raise ValueError("aider histories have no tool turns")
    path = folder / "repo" / ".aider.chat.history.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class SyntheticFormat:
    write: Writer
    session: str  # the session id the reader names the dialogue by
    tool_turns: bool = True


SYNTHETIC_FORMATS: Mapping[str, SyntheticFormat] = {
    "claude-code": SyntheticFormat(write_claude_code, CLAUDE_SESSION),
    "codex": SyntheticFormat(write_codex, CODEX_SESSION),
    "openclaw": SyntheticFormat(write_openclaw, OPENCLAW_SESSION),
    "paperclip": SyntheticFormat(write_paperclip, PAPERCLIP_RUN),
    "chatgpt-export": SyntheticFormat(write_chatgpt_export, CHATGPT_CONVERSATION),
    "jsonl": SyntheticFormat(write_jsonl, JSONL_SESSION),
    "markdown": SyntheticFormat(write_markdown, MARKDOWN_SESSION, tool_turns=False),
}
