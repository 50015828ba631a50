"""aider's chat history (`<repo>/.aider.chat.history.md`), read by the `markdown` format.

aider appends every session to one Markdown file in the repository it works on:
- `# aider chat started at YYYY-MM-DD HH:MM:SS` opens a session (the machine's local time; it is
  taken as UTC, the file naming no zone). The session is named `aider-<that time>`, and every
  message of it is dated by it: aider writes no other times.
- `#### ` lines are what the user typed (consecutive ones are one multi-line input).
- `> ` lines are aider's own notices (files added, tokens used, warnings, `^C`): not dialogue.
- Any other text after the user's input, up to the next input, notice or session, is the
  assistant's reply (plain Markdown, often SEARCH/REPLACE blocks).
- A slash command is not dialogue (`/add`, `/drop`, `/run`, ...), except the ones that carry a
  prompt (`/ask`, `/code`, `/architect`, `/context`, `/copy-context`): their text is kept.
  aider echoes a prompt given with such a command as a second input line; the echo is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memoryd.sources.formats import Decoder
from memoryd.sources.model import Role
from memoryd.sources.records import MalformedLineError, Part, Record, parse_timestamp

HISTORY_NAME = ".aider.chat.history.md"
_STARTED = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
_INPUT = "#### "
_NOTICE = ">"
_PROMPT_COMMANDS = frozenset({"/ask", "/code", "/architect", "/context", "/copy-context"})


class AiderDecoder(Decoder):
    """Decodes `.aider.chat.history.md` line by line (see the module docstring)."""

    def __init__(self, state: Mapping[str, Any], fallback_session: str) -> None:
        self._session = str(state.get("session", fallback_session))
        self._time: datetime | None = parse_timestamp(state.get("time"))
        role = state.get("role")
        self._role: Role | None = role if role in {"user", "assistant"} else None
        last = state.get("last_user")
        self._last_user = last if isinstance(last, str) else None
        self._lines: list[str] = []
        self._first = 0
        self._last = 0

    def decode(self, raw: bytes, line: int) -> list[Record]:
        try:
            text = raw.decode("utf-8").rstrip("\r").rstrip()
        except UnicodeDecodeError as error:
            raise MalformedLineError(f"not UTF-8: {error}") from None
        started = _STARTED.match(text)
        if started:
            done = self._close()
            self._time = parse_timestamp(started.group(1))
            self._session = "aider-" + started.group(1).replace(" ", "T")
            self._role = None
            self._last_user = None
            return done
        if text.startswith(_INPUT) or text == _INPUT.strip():
            typed = text[len(_INPUT) :] if text.startswith(_INPUT) else ""
            if self._role == "user":
                self._add(typed.strip(), line)
                return []
            done = self._close()
            self._role = "user"
            self._add(typed.strip(), line)
            return done
        if text.startswith(_NOTICE):
            done = self._close()
            self._role = None
            return done
        if self._role == "user":
            done = self._close()
            self._role = "assistant"
            self._add(text, line)
            return done
        if self._role == "assistant":
            self._add(text, line)
        return []  # before any input: nothing of the dialogue

    def _add(self, text: str, line: int) -> None:
        if not self._lines:
            if not text.strip():
                return
            self._first = line
        self._lines.append(text)
        if text.strip():
            self._last = line

    def _close(self) -> list[Record]:
        body = "\n".join(self._lines).strip()
        self._lines = []
        role = self._role
        if role is None or not body:
            return []
        if role == "user":
            body = self._user_words(body)
            if not body:
                return []
        return [
            Record(
                line=self._first,
                end_line=self._last,
                session_id=self._session,
                parts=[Part(role, body)],
                timestamp=self._time,
            )
        ]

    def _user_words(self, body: str) -> str:
        """What the user said, without a command that carries none; echoes dropped."""
        if body.startswith("/"):
            command, _, rest = body.partition(" ")
            if command not in _PROMPT_COMMANDS:
                return ""
            body = _without_echo(rest.strip())
        elif body == self._last_user:
            return ""  # aider's echo of a prompt given with a command
        self._last_user = body
        return body

    def flush(self) -> list[Record]:
        return self._close()

    def state(self) -> dict[str, Any]:
        return {
            "session": self._session,
            "time": None if self._time is None else self._time.isoformat(),
            "role": self._role,
            "last_user": self._last_user,
        }


def _without_echo(text: str) -> str:
    """A command's prompt without aider's echo of it on the next input lines."""
    lines = text.split("\n")
    half = len(lines) // 2
    if len(lines) % 2 == 0 and lines[:half] == lines[half:]:
        return "\n".join(lines[:half])
    return text
