"""Generic JSONL transcripts: one `{role, content, timestamp}` object per line.

For agents that log their own way. `role` is user, assistant or tool (human/ai are accepted as
synonyms; system lines are not dialogue). `content` is a string or Anthropic-style content blocks:
text blocks are kept, `tool_result` blocks become untrusted tool turns, thinking, tool calls,
images and documents are dropped. An optional `session_id` (or `session`, `conversation_id`)
names the session; otherwise the file name does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.sources.formats import Decoder, LineFormat
from memoryd.sources.model import Role
from memoryd.sources.records import Part, Record, content_parts, load_object, parse_timestamp

_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
}
_SESSION_KEYS = ("session_id", "session", "conversation_id")


class JsonlFormat(LineFormat):
    name = "jsonl"

    def accepts(self, folder: str, name: str) -> bool:
        return name.endswith((".jsonl", ".ndjson"))

    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        return _JsonlDecoder(path.stem)


class _JsonlDecoder(Decoder):
    def __init__(self, session: str) -> None:
        self._session = session

    def decode(self, raw: bytes, line: int) -> list[Record]:
        entry = load_object(raw)
        role = _ROLES.get(str(entry.get("role", "")).lower())
        session = next(
            (str(entry[k]) for k in _SESSION_KEYS if isinstance(entry.get(k), str | int)),
            self._session,
        )
        record = Record(
            line=line,
            end_line=line,
            session_id=session,
            timestamp=parse_timestamp(entry.get("timestamp", entry.get("time"))),
        )
        if role == "tool":
            parts = content_parts(entry.get("content"), "tool")
            text = "\n".join(part.text for part in parts)
            record.parts = [Part("tool", text, trusted=False)] if text.strip() else []
        elif role is not None:
            record.parts = content_parts(entry.get("content"), role)
        return [record]
