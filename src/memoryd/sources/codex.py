"""OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Rules (research: transcript-formats.md §3):
- Dialogue comes from `response_item` records only. `event_msg` mirrors the same messages for
  display; reading both would file everything twice.
- `developer` messages and user messages that are scaffolding (`<environment_context>`,
  `<user_instructions>`, AGENTS.md instructions, permission blocks) are dropped.
- Reasoning is dropped whole: its `encrypted_content` is opaque and its summary is thinking.
- Tool output (`function_call_output`, `custom_tool_call_output`) becomes an untrusted `tool`
  turn; the calls themselves are not dialogue.
- `compacted` summaries are skipped: the records they summarize stay in the file.
- A rollout Codex compressed (`rollout-*.jsonl.zst`) is read decompressed; while the plain file
  is there too, only the plain one is read, and a plain file replaced by its `.zst` is followed
  (same lineage), not read again.
- The session id is the first `session_meta` id, remembered for later appends; a subagent
  rollout is attributed to its parent thread and marked sidechain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.sources.formats import Decoder, LineFormat
from memoryd.sources.records import (
    Part,
    Record,
    load_object,
    parse_timestamp,
    tool_output_text,
)

_SCAFFOLDING = re.compile(
    r"^\s*(<environment_context>|<user_instructions>|<permissions\b|<user_shell_command>"
    r"|# AGENTS\.md instructions)",
)
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


_ZST = ".zst"


class CodexFormat(LineFormat):
    name = "codex"

    def accepts(self, folder: str, name: str) -> bool:
        return name.endswith((".jsonl", ".jsonl" + _ZST))

    def select(self, paths: list[str]) -> list[str]:
        plain = set(paths)
        return [path for path in paths if not (path.endswith(_ZST) and path[:-4] in plain)]

    def lineage(self, path: Path) -> str | None:
        return str(path).removesuffix(_ZST)

    def compressed(self, path: Path) -> bool:
        return path.name.endswith(_ZST)

    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        stem = path.name.removesuffix(_ZST).removesuffix(".jsonl")
        match = _UUID_TAIL.search(stem)
        fallback = match.group(1) if match else stem
        return _CodexDecoder(state, fallback)


class _CodexDecoder(Decoder):
    def __init__(self, state: Mapping[str, Any], fallback_session: str) -> None:
        self._session = str(state.get("session", fallback_session))
        self._sidechain = bool(state.get("sidechain", False))
        self._has_meta = bool(state.get("has_meta", False))

    def decode(self, raw: bytes, line: int) -> list[Record]:
        entry = load_object(raw)
        kind = entry.get("type")
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            return []
        if kind == "session_meta":
            self._read_meta(payload)
            return []
        if kind != "response_item":
            return []
        parts = _parts(payload)
        if not parts:
            return []
        return [
            Record(
                line=line,
                end_line=line,
                session_id=self._session,
                parts=parts,
                timestamp=parse_timestamp(entry.get("timestamp")),
                sidechain=self._sidechain,
            )
        ]

    def _read_meta(self, payload: dict[str, object]) -> None:
        if self._has_meta:
            return  # a fork repeats its parent's meta after its own; the first one names it
        self._has_meta = True
        source = payload.get("source")
        parent = None
        if isinstance(source, dict):
            subagent = source.get("subagent")
            spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
            if isinstance(spawn, dict) and isinstance(spawn.get("parent_thread_id"), str):
                parent = str(spawn["parent_thread_id"])
        session = payload.get("id")
        if parent is not None:
            self._session, self._sidechain = parent, True
        elif isinstance(session, str) and session:
            self._session = session

    def state(self) -> dict[str, Any]:
        return {"session": self._session, "sidechain": self._sidechain, "has_meta": self._has_meta}


def _parts(payload: dict[str, object]) -> list[Part]:
    item = payload.get("type")
    if item in {"function_call_output", "custom_tool_call_output"}:
        output = payload.get("output")
        if isinstance(output, dict):  # older rollouts wrap it as {"content": ..., "success": ...}
            output = output.get("content")
        text = tool_output_text(output)
        return [Part("tool", text, trusted=False)] if text.strip() else []
    if item != "message":
        return []
    role = payload.get("role")
    if role not in {"user", "assistant"}:
        return []
    text = tool_output_text(payload.get("content")).strip()
    if not text or (role == "user" and _SCAFFOLDING.match(text)):
        return []
    return [Part("user" if role == "user" else "assistant", text)]
