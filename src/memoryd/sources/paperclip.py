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
from memoryd.sources.paperclip_events import DELTA, UNKNOWN, decode_event
from memoryd.sources.records import (
    MalformedLineError,
    Part,
    Record,
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
        if not text.strip():
            return []
        try:
            event = json.loads(text)
        except (ValueError, RecursionError):
            self.note_skipped("stdout line that is not a JSON event")
            return []
        if not isinstance(event, dict):
            self.note_skipped(UNKNOWN)
            return []
        decoded = decode_event(event)
        if not decoded.known:
            kind = event.get("type")
            self.note_skipped(f"{UNKNOWN} (type {kind!r})" if isinstance(kind, str) else UNKNOWN)
            return []
        if not decoded.parts:
            return []
        return [
            Record(
                line=first,
                end_line=last,
                session_id=self._run,
                parts=decoded.parts,
                timestamp=parse_timestamp(self._pending_time),
                merge_id=decoded.merge_id,
                sidechain=decoded.subagent is not None,
                subagent=decoded.subagent,
            )
        ]

    def finish(self, records: list[Record]) -> list[Record]:
        return merge_messages(_join_deltas(records))

    def state(self) -> dict[str, Any]:
        return {
            "pending": self._pending,
            "pending_line": self._pending_line,
            "pending_time": self._pending_time,
        }


def _join_deltas(records: list[Record]) -> list[Record]:
    """Join back-to-back streamed pieces of one reply (gemini's `delta` messages) as written."""
    joined: list[Record] = []
    for record in records:
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and record.merge_id == DELTA
            and previous.merge_id == DELTA
            and previous.subagent == record.subagent
        ):
            last = previous.parts[-1]
            previous.parts[-1] = Part(last.role, last.text + record.parts[0].text, last.trusted)
            previous.end_line = record.end_line
            continue
        joined.append(record)
    for record in joined:
        if record.merge_id == DELTA:
            record.merge_id = None
    return joined
