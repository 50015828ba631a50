"""OpenClaw session logs (`~/.openclaw/agents/<agent>/sessions/<session>.jsonl`).

Rules (research: transcript-formats.md §2):
- Line 1 is the session header (`type: session`) naming the session; older pi-mono files have no
  header and no ids and are read as a plain list named after the file.
- Every entry is a tree node (`id`, `parentId`); `message` entries with role user, assistant or
  toolResult carry dialogue, the rest (model changes, custom entries, compaction) are structural.
  Abandoned branches are dropped (see `_tree`).
- Assistant mirrors of text already delivered to a channel (`provider: openclaw`,
  `model: delivery-mirror`) and gateway-injected notices are duplicates or noise and dropped.
- The envelope a gateway wraps around user text ("Conversation info (untrusted metadata)",
  "Sender (untrusted metadata)" and any such fenced block, then the `[Sun 2026-03-08 22:03
  GMT+9]` stamp; see `_envelope`) is removed, as is the `[[reply_to_current]]` reply tag.
- Reset archives (`*.reset.<ts>`), deleted copies, checkpoints and the `*.trajectory.jsonl` run
  traces written beside each session are not read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.sources._envelope import strip_envelope
from memoryd.sources.formats import Decoder, LineFormat
from memoryd.sources.records import Part, Record, content_parts, load_object, parse_timestamp

_REPLY_TAG = re.compile(r"\[\[\s*reply_to[^\]]*\]\]\s*")
_ARCHIVE_MARKERS = (".reset.", ".deleted.", ".checkpoint.", ".bak")
# OpenClaw (2026.4+) writes a run trace beside every session: events, not the conversation.
_TRAJECTORY = ".trajectory.jsonl"
_DROPPED_MODELS = {"delivery-mirror", "gateway-injected"}


class OpenClawFormat(LineFormat):
    name = "openclaw"
    natural_keys = True
    tree = True

    def accepts(self, folder: str, name: str) -> bool:
        return (
            name.endswith(".jsonl")
            and not name.endswith(_TRAJECTORY)
            and not any(m in name for m in _ARCHIVE_MARKERS)
        )

    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        return _OpenClawDecoder(str(state.get("session", path.stem)))


class _OpenClawDecoder(Decoder):
    def __init__(self, session: str) -> None:
        self._session = session

    def decode(self, raw: bytes, line: int) -> list[Record]:
        entry = load_object(raw)
        kind = entry.get("type")
        if kind == "session":
            if isinstance(entry.get("id"), str) and entry["id"]:
                self._session = str(entry["id"])
            return []
        uid = entry.get("id") if isinstance(entry.get("id"), str) else None
        parent = entry.get("parentId") if isinstance(entry.get("parentId"), str) else None
        record = Record(
            line=line,
            end_line=line,
            session_id=self._session,
            timestamp=parse_timestamp(entry.get("timestamp")),
            key=str(uid) if uid else None,
            uid=str(uid) if uid else None,
            parent=str(parent) if parent else None,
        )
        message = entry.get("message")
        if kind != "message" or not isinstance(message, dict):
            return [record] if uid else []
        record.leaf_candidate = True
        # An edited prompt or a regenerated reply starts a branch; tool results do not.
        record.opens_branch = message.get("role") in {"user", "assistant"}
        if record.timestamp is None:
            record.timestamp = parse_timestamp(message.get("timestamp"))
        record.parts = _parts(message)
        return [record]

    def state(self) -> dict[str, Any]:
        return {"session": self._session}


def _parts(message: dict[str, object]) -> list[Part]:
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        parts = content_parts(content, "user")
        cleaned = [
            Part(p.role, _unwrap(p.text), p.trusted) if p.role == "user" else p for p in parts
        ]
        return [part for part in cleaned if part.text.strip()]
    if role == "assistant":
        if message.get("model") in _DROPPED_MODELS:
            return []
        parts = content_parts(content, "assistant")
        cleaned = [Part(p.role, _REPLY_TAG.sub("", p.text).strip(), p.trusted) for p in parts]
        return [part for part in cleaned if part.text]
    if role in {"toolResult", "bashExecution"}:
        text = "\n".join(p.text for p in content_parts(content, "tool"))
        if role == "bashExecution" and not text:
            text = str(message.get("output") or "")
        return [Part("tool", text, trusted=False)] if text.strip() else []
    return []


def _unwrap(text: str) -> str:
    return strip_envelope(text)[0].strip()
