"""Decoded records: the common shape between a format's decoder and the `Conversation`s it yields.

A decoder turns one line (or one export object) into `Record`s. A record is one node of the
transcript: it may carry dialogue (`parts`) or be purely structural (a tree node such as a Claude
Code `compact_boundary` that later records hang from). Keeping structural nodes lets branch
pruning walk parent links; only records with parts become turns.

This module also holds the small decoding helpers every format shares: timestamps in their
several spellings, Anthropic-style content blocks, and strict JSON object lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memoryd.errors import MemorydError
from memoryd.sources.model import Conversation, Provenance, Role, Turn

# Epoch numbers above this are milliseconds (1e11 seconds is the year 5138).
_MILLISECONDS_THRESHOLD = 1e11


class MalformedLineError(MemorydError):
    """One record cannot be decoded; it is skipped and counted, the file goes on."""


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of dialogue inside a record."""

    role: Role
    text: str
    trusted: bool = True


@dataclass(slots=True)  # slots: a read builds one per line, and they are many
class Record:
    """One decoded transcript record. See the module docstring."""

    line: int  # first line (1-based) the record came from; 0 for non-line formats
    end_line: int
    session_id: str
    parts: list[Part] = field(default_factory=list)
    timestamp: datetime | None = None
    key: str | None = None  # the format's own record id, when it has one
    uid: str | None = None  # node id in a transcript tree
    parent: str | None = None  # parent node id in that tree
    leaf_candidate: bool = False  # a dialogue node that can end the current branch
    opens_branch: bool = False  # as the first record of a sibling branch, it replaced another
    sidechain: bool = False
    subagent: str | None = None
    merge_id: str | None = None  # records sharing it, back to back, are one message
    locator: str | None = None
    title: str | None = None


def parse_timestamp(value: object) -> datetime | None:
    """Given an ISO 8601 string or epoch seconds/milliseconds, return an aware UTC datetime.

    Naive ISO times are taken as UTC (the formats that write them all log UTC). Return None for
    anything unparseable rather than raising: a missing time is repaired later, not fatal.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > _MILLISECONDS_THRESHOLD else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    return None


def load_object(raw: bytes) -> dict[str, object]:
    """Decode one JSON line that must hold an object. Raise MalformedLineError otherwise."""
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        # RecursionError: a line of thousands of nested brackets, garbage or hostile
        raise MalformedLineError(f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise MalformedLineError("not a JSON object")
    return value


def split_concatenated(raw: bytes) -> list[bytes] | None:
    """The JSON objects of a line that holds several with nothing between them (`{...}{...}`,
    a writer that lost a newline), each as its own bytes; None unless the whole line is two or
    more objects."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    pieces: list[bytes] = []
    index = 0
    try:
        while index < len(text):
            start = index
            value, index = decoder.raw_decode(text, index)
            if not isinstance(value, dict):
                return None
            pieces.append(text[start:index].encode("utf-8"))
            while index < len(text) and text[index] in " \t\r":
                index += 1
    except (ValueError, RecursionError):
        return None
    return pieces if len(pieces) > 1 else None


def text_of(value: object) -> str | None:
    """Return `value` if it is a non-blank string, else None."""
    if isinstance(value, str) and value.strip():
        return value
    return None


def tool_output_text(content: object) -> str:
    """Flatten a tool result's content (a string or text blocks) to text; drop media blocks."""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict) and block.get("type") in {
                "text",
                "output_text",
                "input_text",
            }:
                text = block.get("text")
                if isinstance(text, str):
                    pieces.append(text)
    return "\n".join(pieces)


def content_parts(content: object, role: Role) -> list[Part]:
    """Given Anthropic-style message content, return its dialogue parts.

    Text blocks become `role` parts; `tool_result` blocks become untrusted tool parts kept whole.
    Thinking, tool calls, images and base64 documents are dropped here, at the source, so their
    bulk never travels further.
    """
    if isinstance(content, str):
        return [Part(role, content)] if content.strip() else []
    parts: list[Part] = []
    texts: list[str] = []
    if not isinstance(content, list):
        return parts
    for block in content:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in {"text", "input_text", "output_text"}:
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
        elif kind == "tool_result":
            output = tool_output_text(block.get("content"))
            if output.strip():
                parts.append(Part("tool", output, trusted=False))
    text = "\n\n".join(piece for piece in texts if piece.strip())
    if text:
        parts.insert(0, Part(role, text))
    return parts


@dataclass(frozen=True)
class FileContext:
    """Who a file's conversations belong to, and the time that stands in for missing ones."""

    agent: str
    routine: str | None
    source_format: str
    file: str
    fallback_time: datetime


def assemble(records: Iterable[Record], context: FileContext) -> list[Conversation]:
    """Group records into conversations (by session and subagent), keeping file order."""
    grouped: dict[tuple[str, str | None], list[Turn]] = {}
    titles: dict[tuple[str, str | None], str] = {}
    last_time = context.fallback_time
    for record in records:
        if record.timestamp is not None:
            last_time = record.timestamp
        if record.title and (record.session_id, record.subagent) not in titles:
            titles[(record.session_id, record.subagent)] = record.title
        if not record.parts:
            continue
        turns = grouped.setdefault((record.session_id, record.subagent), [])
        provenance = Provenance(context.file, (record.line, record.end_line), record.locator)
        stamp = record.timestamp or last_time
        turns.extend(
            Turn(
                role=part.role,
                text=_encodable(part.text),
                timestamp=stamp,
                provenance=provenance,
                sidechain=record.sidechain,
                trusted=part.trusted and part.role != "tool",
            )
            for part in record.parts
        )
    conversations = []
    for (session_id, subagent), turns in grouped.items():
        metadata = {"subagent": subagent} if subagent else {}
        conversations.append(
            Conversation(
                agent=context.agent,
                session_id=session_id,
                source_format=context.source_format,
                turns=tuple(turns),
                routine=context.routine,
                title=titles.get((session_id, subagent)),
                metadata=metadata,
            )
        )
    return conversations


def _encodable(text: str) -> str:
    """Replace lone surrogates with U+FFFD, so the text can always be written as UTF-8.

    JSON may escape them (`\\ud800`), as binary tool output logged by an agent does.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def merge_messages(records: Sequence[Record]) -> list[Record]:
    """Join back-to-back records that share a `merge_id` (one API message split over lines).

    Structural records in between do not break a run: Claude Code writes a message's tool calls
    as their own lines between its text lines.
    """
    merged: list[Record] = []
    open_record: Record | None = None
    for record in records:
        if not record.parts:
            merged.append(record)
            continue
        if (
            open_record is not None
            and record.merge_id is not None
            and record.merge_id == open_record.merge_id
            and record.session_id == open_record.session_id
            and record.sidechain == open_record.sidechain
            and all(part.role == "assistant" for part in record.parts)
        ):
            text = "\n\n".join(part.text for part in record.parts)
            last = open_record.parts[-1]
            open_record.parts[-1] = Part(last.role, last.text + "\n\n" + text, last.trusted)
            open_record.end_line = record.end_line
            continue
        merged.append(record)
        only_assistant = all(part.role == "assistant" for part in record.parts)
        open_record = record if record.merge_id is not None and only_assistant else None
    return merged
