"""Plain Markdown transcripts: `### User` / `### Assistant` sections, `user:` / `assistant:` lines.

A message runs from its heading or prefix line to the next one; lines before the first message
are preamble. The preamble may name the session (`**Session ID**: ...`, else the file name) and
its start (`# Session: <time>`); a `> <time>` line right under a heading dates that message.
User text wrapped in an OpenClaw gateway envelope (the "Conversation info" and "Sender"
metadata blocks, a `[Wed 2026-03-18 09:42 UTC]` stamp; see `_envelope`) is unwrapped, and the
time the envelope gives dates that message.
Messages without a time of their own take the last known one; with none at all, a `YYYY-MM-DD`
date in the file name (noon UTC), else the file's modification time.

aider's `.aider.chat.history.md` has conventions of its own and its own reader (`aider`).

Reading is incremental like every line format: a message still being written when a read ends is
yielded as it stands, and lines appended to it later come as a further turn of the same role (the
permitted "one message, two turns" split).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryd.sources._envelope import strip_envelope
from memoryd.sources.aider import HISTORY_NAME, AiderDecoder
from memoryd.sources.formats import Decoder, LineFormat
from memoryd.sources.model import Role
from memoryd.sources.records import MalformedLineError, Part, Record, parse_timestamp

_HEADING = re.compile(r"^#{2,4}\s*(user|assistant|human|ai)\s*:?\s*$", re.IGNORECASE)
_PREFIX = re.compile(r"^(user|assistant|human|ai)\s*:\s?(.*)$", re.IGNORECASE)
_SESSION_TIME = re.compile(r"^#\s*Session:\s*(.+?)\s*$")
_SESSION_ID = re.compile(r"^\s*[-*]\s*\*\*Session ID\*\*\s*:?\s*(\S+)")
_QUOTED_TIME = re.compile(r"^>\s*(\d{4}-\d{2}-\d{2}[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)\s*$")
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
}


class MarkdownFormat(LineFormat):
    name = "markdown"

    def accepts(self, folder: str, name: str) -> bool:
        return name.endswith((".md", ".markdown", ".txt"))

    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        if path.name.endswith(HISTORY_NAME):
            return AiderDecoder(state, path.name)
        return _MarkdownDecoder(state, path.stem)


def date_in_name(name: str) -> datetime | None:
    """Noon UTC of a `YYYY-MM-DD` date in a file name (`2026-01-15-standup.md`), if any.

    Noon keeps the date the same in every time zone within twelve hours of UTC.
    """
    match = _NAME_DATE.search(name)
    if match is None:
        return None
    year, month, day = (int(part) for part in match.groups())
    try:
        return datetime(year, month, day, 12, tzinfo=UTC)
    except ValueError:
        return None


class _MarkdownDecoder(Decoder):
    def __init__(self, state: Mapping[str, Any], fallback_session: str) -> None:
        self._session = str(state.get("session", fallback_session))
        # Without times in the text, a date in the file name beats the file's mtime (which is
        # when the file was last copied or touched, not when the conversation happened).
        self._time = parse_timestamp(state.get("time")) or date_in_name(fallback_session)
        role = state.get("role")
        self._role: Role | None = _ROLES.get(role) if isinstance(role, str) else None
        self._lines: list[str] = []
        self._first = 0
        self._last = 0
        self._message_time: datetime | None = None
        self._fresh_heading = False
        self._dated = bool(state.get("dated", False))  # a message of known time was read
        self._undated_ids: set[int] = set()  # first lines of messages read before that

    def decode(self, raw: bytes, line: int) -> list[Record]:
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as error:
            raise MalformedLineError(f"not UTF-8: {error}") from None
        match = _HEADING.match(text) or _PREFIX.match(text)
        if match is not None:
            done = self._close()
            is_heading = match.re is _HEADING
            self._role = _ROLES[match.group(1).lower()]
            first_text = "" if is_heading else match.group(2)
            self._lines = [first_text] if first_text.strip() else []
            self._first = self._last = line
            self._message_time = None
            self._fresh_heading = is_heading
            return done
        if self._role is None:
            self._read_preamble(text)
            return []
        if self._fresh_heading:
            quoted = _QUOTED_TIME.match(text)
            if quoted:
                self._message_time = parse_timestamp(quoted.group(1))
                self._fresh_heading = False
                return []
            if not text.strip():
                return []
            self._fresh_heading = False
        if not self._lines:
            if not text.strip():
                return []
            self._first = line
        self._lines.append(text)
        if text.strip():
            self._last = line
        return []

    def _read_preamble(self, text: str) -> None:
        session = _SESSION_ID.match(text)
        if session:
            self._session = session.group(1).strip("`")
        stamp = _SESSION_TIME.match(text)
        if stamp:
            self._time = parse_timestamp(stamp.group(1).removesuffix(" UTC")) or self._time

    def _close(self) -> list[Record]:
        body = "\n".join(self._lines).strip()
        self._lines = []
        if self._role is None or not body:
            return []
        if self._role == "user":
            body, sent = strip_envelope(body)
            if not body:
                return []
            self._message_time = self._message_time or sent
        own = self._message_time is not None
        if own:
            self._time = self._message_time
        elif not self._dated:
            self._undated_ids.add(self._first)  # before any message of known time
        self._dated = self._dated or own
        return [
            Record(
                line=self._first,
                end_line=self._last,
                session_id=self._session,
                parts=[Part(self._role, body)],
                timestamp=self._time,
                key=f"{self._role}:{body}",
            )
        ]

    def flush(self) -> list[Record]:
        return self._close()

    def finish(self, records: list[Record]) -> list[Record]:
        """Messages before the first one of known time happened no later than it (a memory file
        that opens with the assistant's reply must not be dated by its header, written later)."""
        first_dated = next(
            (r.timestamp for r in records if r.line not in self._undated_ids and r.parts), None
        )
        if first_dated is not None:
            for record in records:
                if record.line not in self._undated_ids:
                    break
                if record.timestamp is not None and record.timestamp > first_dated:
                    record.timestamp = first_dated
        return records

    def state(self) -> dict[str, Any]:
        return {
            "session": self._session,
            "time": None if self._time is None else self._time.isoformat(),
            "role": self._role,
            "dated": self._dated,
        }
