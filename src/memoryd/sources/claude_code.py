"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).

Rules (research: transcript-formats.md §1):
- Dialogue is `user` and `assistant` records; `summary`, `isMeta`, `system` and bookkeeping types
  are structural at most (tree nodes later records may hang from), never turns. Unknown types are
  ignored, since every release adds some.
- An assistant message is written as one line per content block sharing `message.id`; the lines
  are merged back into one turn. Only text blocks are kept (no thinking, tool calls, images).
- Tool results come back as `user` records; their text becomes an untrusted `tool` turn. The
  `toolUseResult` side-car duplicates it and is never read.
- The current branch follows `parentUuid` (across a `compact_boundary` via `logicalParentUuid`),
  so branches abandoned by a rewind are dropped (see `_tree`); only a branch that starts with a
  user prompt counts as a rewind, so tool results that fork from parallel calls are kept.
- A compaction summary is skipped once the file has shown dialogue before it: the originals are
  in the file. Only a file that starts with one (a continued session) keeps it.
- Subagent transcripts (inline `isSidechain`, legacy `agent-*.jsonl`, `<session>/subagents/`)
  are attributed to their session and marked sidechain. The compaction pseudo-subagent
  (`subagents/agent-acompact-*.jsonl`: Claude Code's summarisation prompt and the summary it
  got) is not dialogue and never read, like the compaction summary in the session file.
  `tool-results/` spill files and `journal.jsonl` are not transcripts and are never read.
- A uuid seen before is a duplicate and dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.sources.formats import Decoder, LineFormat
from memoryd.sources.records import (
    Part,
    Record,
    content_parts,
    load_object,
    merge_messages,
    parse_timestamp,
)

_COMMAND = re.compile(r"<command-(name|message|args)>(.*?)</command-\1>", re.DOTALL)
_NOISE = re.compile(
    r"<(local-command-stdout|local-command-caveat|system-reminder)>.*?</\1>", re.DOTALL
)
# Claude Code runs its compaction as a pseudo-subagent: `<session>/subagents/agent-acompact-*`.
_COMPACTION_ID = "acompact"
_COMPACTION_AGENT = "agent-" + _COMPACTION_ID
_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]]*\]$")


class ClaudeCodeFormat(LineFormat):
    name = "claude-code"
    natural_keys = True
    tree = True

    def accepts(self, folder: str, name: str) -> bool:
        return (
            name.endswith(".jsonl")
            and name != "journal.jsonl"
            and not name.startswith(_COMPACTION_AGENT)
            and "tool-results" not in folder.split(os.sep)
        )

    def decoder(self, path: Path, state: Mapping[str, Any]) -> Decoder:
        subagent = _subagent_of(path)
        default_session = path.parent.parent.name if "subagents" in path.parts else path.stem
        return _ClaudeDecoder(state, subagent=subagent, default_session=default_session)


def _subagent_of(path: Path) -> str | None:
    if path.name.startswith("agent-") or "subagents" in path.parts:
        return path.stem.removeprefix("agent-")
    return None


class _ClaudeDecoder(Decoder):
    def __init__(self, state: Mapping[str, Any], *, subagent: str | None, default_session: str):
        self._subagent = subagent
        self._default_session = str(state.get("session", default_session))
        self._had_dialogue = bool(state.get("had_dialogue", False))

    def decode(self, raw: bytes, line: int) -> list[Record]:
        entry = load_object(raw)
        kind = entry.get("type")
        uid = _string(entry.get("uuid"))
        session = _string(entry.get("sessionId")) or self._default_session
        parent = _string(entry.get("parentUuid"))
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            parent = _string(entry.get("logicalParentUuid")) or parent
        subagent = self._subagent or _string(entry.get("agentId"))
        if subagent is not None and subagent.startswith(_COMPACTION_ID):
            return []  # the compaction's own prompt and summary: derivative, never dialogue
        record = Record(
            line=line,
            end_line=line,
            session_id=session,
            timestamp=parse_timestamp(entry.get("timestamp")),
            key=uid,
            uid=uid,
            parent=parent,
            sidechain=self._subagent is not None or entry.get("isSidechain") is True,
            subagent=subagent if self._subagent is not None else None,
        )
        message = entry.get("message")
        if kind not in {"user", "assistant"} or not isinstance(message, dict):
            return [record] if uid is not None else []
        record.leaf_candidate = True
        if entry.get("isMeta") is True:
            return [record]
        if entry.get("isCompactSummary") is True and self._had_dialogue:
            return [record]
        if kind == "assistant":
            record.parts = [p for p in content_parts(message.get("content"), "assistant")]
            record.merge_id = _string(message.get("id"))
        else:
            record.parts = [
                clean_user_part(part) for part in content_parts(message.get("content"), "user")
            ]
            record.parts = [part for part in record.parts if part.text.strip()]
        if record.parts:
            self._had_dialogue = True
        # Claude Code forks only by a rewind, which re-sends a user prompt.
        record.opens_branch = any(part.role == "user" for part in record.parts)
        return [record]

    def finish(self, records: list[Record]) -> list[Record]:
        return merge_messages(records)

    def state(self) -> dict[str, Any]:
        return {"had_dialogue": self._had_dialogue}


def clean_user_part(part: Part) -> Part:
    """Turn Claude Code's slash-command markup into the command line the user typed."""
    if part.role != "user":
        return part
    text = part.text
    if "<command-" in text:
        fields = {match.group(1): match.group(2).strip() for match in _COMMAND.finditer(text)}
        command = " ".join(filter(None, (fields.get("name", ""), fields.get("args", ""))))
        text = _COMMAND.sub("", text).strip()
        text = f"{command}\n{text}".strip() if command else text
    text = _NOISE.sub("", text).strip()
    if _INTERRUPTED.match(text):
        text = ""
    return Part(part.role, text, part.trusted)


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
