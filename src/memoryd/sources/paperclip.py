"""Paperclip heartbeat run logs (`.../run-logs/<company>/<agent>/<run>.ndjson`, later `.ndjson.gz`).

Rules (research: transcript-formats.md §6):
- Each line is `{ts, stream, chunk}`; `chunk` is raw process output, not line-aligned. The
  `stdout` chunks are joined and split on newlines; the unfinished tail waits in the cursor state
  (bounded: a tail past `MAX_PENDING` characters is dropped and counted as malformed).
- Each complete stdout line is read as the agent CLI's stream-JSON (`assistant`, `user`, `result`,
  `system` events). Assistant text is dialogue (one message may arrive as several events sharing
  `message.id`: they are merged), tool results are untrusted tool turns, and the final `result`
  event repeats the last answer and is skipped. Non-JSON stdout is not a record and is ignored.
- A finished log may be gzipped and its `.ndjson` unlinked. Both names share the run id as their
  lineage, so the reader carries the position over instead of reading the run again; while both
  files exist, the plain one is read.
- The session is the run id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.sources.formats import Decoder, LineFormat
from memoryd.sources.model import Role
from memoryd.sources.records import (
    MalformedLineError,
    Record,
    content_parts,
    load_object,
    merge_messages,
    parse_timestamp,
)

MAX_PENDING = 8 * 1024 * 1024
_PLAIN = ".ndjson"
_GZIPPED = ".ndjson.gz"


def run_id(path: Path) -> str:
    """Return the run id a log file belongs to."""
    name = path.name
    for suffix in (_GZIPPED, _PLAIN):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


class PaperclipFormat(LineFormat):
    name = "paperclip"

    def accepts(self, folder: str, name: str) -> bool:
        return name.endswith((_PLAIN, _GZIPPED))

    def select(self, paths: list[str]) -> list[str]:
        plain = {path for path in paths if path.endswith(_PLAIN)}
        return [path for path in paths if not (path.endswith(_GZIPPED) and path[:-3] in plain)]

    def lineage(self, path: Path) -> str | None:
        return str(path.parent / run_id(path))

    def compressed(self, path: Path) -> bool:
        return path.name.endswith(".gz")

    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        return _PaperclipDecoder(state, run_id(path))


class _PaperclipDecoder(Decoder):
    def __init__(self, state: Mapping[str, Any], run: str) -> None:
        self._run = run
        pending = state.get("pending", "")
        self._pending = pending if isinstance(pending, str) else ""
        started = state.get("pending_line", 0)
        self._pending_line = started if isinstance(started, int) else 0
        self._pending_time: object = state.get("pending_time")

    def decode(self, raw: bytes, line: int) -> list[Record]:
        entry = load_object(raw)
        chunk = entry.get("chunk")
        if entry.get("stream") != "stdout" or not isinstance(chunk, str):
            return []
        if not self._pending:
            self._pending_line = line
            self._pending_time = entry.get("ts")
        self._pending += chunk
        *complete, rest = self._pending.split("\n")
        records: list[Record] = []
        for inner in complete:
            records.extend(self._event(inner, self._pending_line, line))
            self._pending_line = line
            self._pending_time = entry.get("ts")
        self._pending = rest
        if len(self._pending) > MAX_PENDING:
            self._pending = ""
            raise MalformedLineError("stdout line longer than the pending limit; dropped")
        return records

    def _event(self, text: str, first: int, last: int) -> list[Record]:
        try:
            event = json.loads(text)
        except (ValueError, RecursionError):
            return []  # plain process output, not an event
        if not isinstance(event, dict) or event.get("type") not in {"assistant", "user"}:
            return []
        message = event.get("message")
        if not isinstance(message, dict):
            return []
        role: Role = "assistant" if event["type"] == "assistant" else "user"
        parts = content_parts(message.get("content"), role)
        if not parts:
            return []
        merge_id = message.get("id") if role == "assistant" else None
        return [
            Record(
                line=first,
                end_line=last,
                session_id=self._run,
                parts=parts,
                timestamp=parse_timestamp(self._pending_time),
                merge_id=merge_id if isinstance(merge_id, str) else None,
            )
        ]

    def finish(self, records: list[Record]) -> list[Record]:
        return merge_messages(records)

    def state(self) -> dict[str, Any]:
        return {
            "pending": self._pending,
            "pending_line": self._pending_line,
            "pending_time": self._pending_time,
        }
