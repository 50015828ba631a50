"""The remembered queue of one agent, read as that agent's own words.

`memoryd.reading.remember` appends what an agent asks to keep to
`queue/remembered/<agent>/<day>.jsonl`. That folder is group-writable, so a line in it is not
trusted to be what `remember` wrote: this format keeps a line only when it is a `remember:` or
`note:` line within the limits `remember` enforces (`accepted_line`), and when it names no agent
or the folder's own; everything else is refused with `remember.line_refused` (a line claiming
another agent, a `skill:`, `tacit:` or `supersede:` line, an over-long text). A kept line is
always an `assistant` turn, whatever role it claims: it is the agent's words, never the user's;
its chunks carry the format name `remembered`, which the excerpt shown to the model names as the
agent asking to remember, not the user (`memoryd.extractors.chunking.render_turn`).

For an agent with a configured `user`, a file in its folder is filed only when that user (or
root) owns it, as `fstat` on the opened file says: any other file is refused as a whole
(`remember.file_refused`, with its owner), skipped and never filed. Without `user`, any writer
in memoryd's group may speak for the agent (agents sharing an OS user cannot be told apart).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.extractors.chunking import REMEMBERED_FORMAT
from memoryd.logs import get_logger
from memoryd.reading.accesses import trusted_owner
from memoryd.reading.remember import accepted_line, agent_folder_name
from memoryd.sources.formats import Decoder
from memoryd.sources.jsonl import JsonlFormat
from memoryd.sources.records import Part, Record, load_object, parse_timestamp

log = get_logger(__name__)


class RememberedFormat(JsonlFormat):
    """The `jsonl` layout, restricted to the lines `remember` writes for `folder`'s agent."""

    name = REMEMBERED_FORMAT

    def __init__(self, folder: str, uid: int | None = None) -> None:
        self.folder = folder
        self.uid = uid

    def refusal(self, path: Path, opened: os.stat_result) -> str | None:
        if trusted_owner(opened.st_uid, self.uid):
            return None
        log.warning("remember.file_refused", path=str(path), owner=opened.st_uid, expected=self.uid)
        return f"owned by uid {opened.st_uid}, not the agent's user (uid {self.uid})"

    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        return _RememberedDecoder(path, self.folder)


class _RememberedDecoder(Decoder):
    def __init__(self, path: Path, folder: str) -> None:
        self._path = path
        self._folder = folder

    def decode(self, raw: bytes, line: int) -> list[Record]:
        entry = load_object(raw)
        session = entry.get("session_id")
        record = Record(
            line=line,
            end_line=line,
            session_id=session if isinstance(session, str) else self._path.stem,
            timestamp=parse_timestamp(entry.get("timestamp")),
        )
        reason = _refusal(entry, self._folder)
        if reason is not None:
            log.warning("remember.line_refused", path=str(self._path), line=line, reason=reason)
            self.note_skipped(f"remembered line refused: {reason}")
            return [record]
        record.parts = [Part("assistant", str(entry["content"]))]
        return [record]


def _refusal(entry: Mapping[str, object], folder: str) -> str | None:
    """Why a queued line is not filed, or None when it is."""
    agent = entry.get("agent")
    if agent is not None and (not isinstance(agent, str) or agent_folder_name(agent) != folder):
        return "it claims another agent than its folder's"
    if entry.get("role") not in {"user", "assistant"}:
        return "not a turn remember writes"
    if not accepted_line(entry.get("content")):
        return "not a remember: or note: line within the limits"
    return None
