"""ChatGPT data exports (`conversations.json`): a JSON array re-exported whole each time.

Rules (research: transcript-formats.md §4):
- The file is parsed incrementally, one top-level conversation object at a time from a sliding
  buffer (`json.JSONDecoder.raw_decode`), never loaded whole. A file holding one bare conversation
  object is read the same way.
- Conversations are tracked by id: the state maps each id to `[update_time, newest message time
  yielded]`. An unchanged `update_time` means nothing new; a changed one yields only the messages
  on the current branch newer than what was yielded before.
- The current branch is walked back from `current_node` (without one, down the newest children),
  so edited prompts and regenerated answers left behind are not read.
- Dialogue is user and assistant messages addressed to everyone (`recipient: all`) with text
  parts, not hidden; tool output (`execution_output`, tool-role text) is an untrusted tool turn.
  Custom instructions, thoughts, reasoning recaps, reasoning summaries stored as tool messages
  ("Reasoned for 5m 6s") and calls to tools are dropped; image pointers inside multimodal parts
  and the private-use citation markers inside answers are dropped.
- Provenance has no line numbers: the locator is `<conversation id>/<message id>`.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, BinaryIO

from memoryd.sources.formats import DocumentFormat, DocumentRead, MalformedDocumentError
from memoryd.sources.model import Role
from memoryd.sources.records import Part, Record, parse_timestamp

BLOCK_BYTES = 1 << 20
MAX_OBJECT_CHARS = 256 * 1024 * 1024
_WHITESPACE = " \t\r\n"
_REASONING_LABELS = frozenset({"Reasoning", "Thinking"})
_REASONING_PREFIXES = ("Reasoned for", "Thought for")
# ChatGPT marks citations inline with Unicode private-use characters: U+E200 opens one, U+E202
# separates its fields, U+E201 closes it (`\ue200filecite\ue202turn0file0\ue201`).
_CITATION = re.compile(r"[ \t]?\ue200[^\ue201]{0,200}\ue201")
_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")


class ChatGptExportFormat(DocumentFormat):
    name = "chatgpt-export"

    def accepts(self, folder: str, name: str) -> bool:
        return name.endswith(".json")

    def read(
        self,
        stream: BinaryIO,
        start: int,
        state: Mapping[str, Any],
        *,
        budget: int,
        not_before: datetime | None,
    ) -> DocumentRead:
        stored = state.get("conversations", {})
        known: dict[str, list[float]] = dict(stored) if isinstance(stored, dict) else {}
        result = DocumentRead(records=[], state={}, position=start, complete=False)
        objects = _ObjectStream(stream, start)
        for value, end in objects:
            result.position = end
            if not isinstance(value, dict):
                result.malformed += 1
                continue
            records, skipped_old = _conversation(value, known, not_before)
            result.records.extend(records)
            result.before_since += skipped_old
            if end - start >= budget:
                break
        else:
            result.complete = True
        result.bytes_read = result.position - start
        result.state = {"conversations": {key: known[key] for key in sorted(known)}}
        return result


class _ObjectStream:
    """Yield (object, byte offset after it) for each top-level conversation object."""

    def __init__(self, stream: BinaryIO, start: int) -> None:
        self._stream = stream
        self._start = start
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._buffer = ""
        self._index = 0
        self._base = 0  # index in the buffer of the byte offset below
        self._base_offset = start
        self._eof = False

    def __iter__(self) -> Iterator[tuple[object, int]]:
        self._stream.seek(self._start)
        first = self._peek()
        if self._start == 0 and first == "{":
            yield self._object()
            return
        if self._start == 0:
            if first != "[":
                raise MalformedDocumentError("not a JSON array or object")
            self._index += 1
            if self._peek() == "]":
                return
        elif first != ",":  # resuming right after an object: only a separator or the end fits
            if first == "]":
                return
            raise MalformedDocumentError("cannot resume: no separator after the last object")
        else:
            self._index += 1
        while True:
            yield self._object()
            separator = self._peek()
            if separator == "]":
                return
            if separator != ",":
                raise MalformedDocumentError("expected ',' or ']' between conversations")
            self._index += 1

    def _fill(self) -> None:
        # Trim only here, and only what is accounted for, so slicing stays amortised linear.
        self._buffer = self._buffer[self._base :]
        self._index -= self._base
        self._base = 0
        size = max(BLOCK_BYTES, len(self._buffer) - self._index)  # doubling keeps retries linear
        data = self._stream.read(size)
        if not data:
            self._eof = True
        try:
            self._buffer += self._decoder.decode(data, final=self._eof)
        except UnicodeDecodeError as error:
            raise MalformedDocumentError(f"not UTF-8: {error}") from None

    def _peek(self) -> str:
        while True:
            while self._index < len(self._buffer) and self._buffer[self._index] in _WHITESPACE:
                self._index += 1
            if self._index < len(self._buffer):
                return self._buffer[self._index]
            if self._eof:
                raise MalformedDocumentError("the document ends early")
            self._fill()

    def _object(self) -> tuple[object, int]:
        self._peek()
        decoder = json.JSONDecoder()
        while True:
            try:
                value, end = decoder.raw_decode(self._buffer, self._index)
            except RecursionError:
                raise MalformedDocumentError("nested too deeply to parse") from None
            except json.JSONDecodeError as error:
                if self._eof:
                    raise MalformedDocumentError(f"broken JSON: {error.msg}") from None
                if len(self._buffer) - self._index > MAX_OBJECT_CHARS:
                    raise MalformedDocumentError("one conversation is too large to read") from None
                self._fill()
                continue
            self._base_offset += len(self._buffer[self._base : end].encode("utf-8"))
            self._base = self._index = end
            return value, self._base_offset


def _conversation(
    conversation: dict[str, Any], known: dict[str, list[float]], not_before: datetime | None
) -> tuple[list[Record], int]:
    """Return the new records of one conversation and how many were older than `not_before`."""
    conversation_id = conversation.get("id") or conversation.get("conversation_id")
    if not isinstance(conversation_id, str) or not conversation_id:
        return [], 0
    updated = _number(conversation.get("update_time")) or _number(conversation.get("create_time"))
    previous = known.get(conversation_id)
    if previous is not None and updated <= previous[0]:
        return [], 0
    floor = previous[1] if previous is not None else float("-inf")
    if previous is None and not_before is not None:
        floor = not_before.timestamp()
    fallback = _number(conversation.get("create_time")) or updated
    title = conversation.get("title") if isinstance(conversation.get("title"), str) else None
    records: list[Record] = []
    newest = floor
    older = 0
    for message in _current_branch(conversation):
        stamp = _number(message.get("create_time")) or fallback
        parts = _parts(message)
        if not parts:
            continue
        newest = max(newest, stamp)
        # Already yielded: up to and including the mark. Before the cutoff: strictly older.
        if stamp <= floor if previous is not None else stamp < floor:
            older += previous is None
            continue
        records.append(
            Record(
                line=0,
                end_line=0,
                session_id=conversation_id,
                parts=parts,
                timestamp=parse_timestamp(stamp),
                locator=f"{conversation_id}/{message.get('id', '')}",
                title=title,
            )
        )
    known[conversation_id] = [updated, newest if newest != float("-inf") else updated]
    return records, older


def _current_branch(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        return []
    node_id = conversation.get("current_node")
    if not isinstance(node_id, str) or node_id not in mapping:
        node_id = _newest_leaf(mapping)
    chain: list[dict[str, Any]] = []
    visited: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in visited:
        visited.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        if isinstance(node.get("message"), dict):
            chain.append(node["message"])
        node_id = node.get("parent")
    chain.reverse()
    return chain


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    roots = [
        key for key, node in mapping.items() if isinstance(node, dict) and not node.get("parent")
    ]
    node_id = roots[0] if roots else None
    visited: set[str] = set()
    while node_id is not None and node_id not in visited:
        visited.add(node_id)
        children = mapping.get(node_id, {}).get("children") or []
        if not children:
            return node_id
        node_id = children[-1]
    return node_id


def _parts(message: dict[str, Any]) -> list[Part]:
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    content = message.get("content")
    metadata = message.get("metadata")
    if not isinstance(content, dict):
        return []
    if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
        return []
    kind = content.get("content_type")
    if role == "tool":
        return _tool_parts(content, metadata)
    if (
        role not in {"user", "assistant"}
        or message.get("recipient", "all") != "all"
        or kind not in {"text", "multimodal_text"}
    ):
        return []
    text = _joined(content.get("parts"))
    if role == "assistant":
        text = _without_citations(text)
    speaker: Role = "user" if role == "user" else "assistant"
    return [Part(speaker, text)] if text.strip() else []


def _tool_parts(content: dict[str, Any], metadata: object) -> list[Part]:
    if _reasoning_summary(metadata):
        return []
    kind = content.get("content_type")
    text = content.get("text") if kind == "execution_output" else _joined(content.get("parts"))
    return [Part("tool", text, trusted=False)] if isinstance(text, str) and text.strip() else []


def _reasoning_summary(metadata: object) -> bool:
    """Whether a tool-role message is a reasoning model's summary of its thinking ("Reasoned for
    5m 6s"): thinking, not tool output."""
    if not isinstance(metadata, dict):
        return False
    finished = metadata.get("finished_text")
    return metadata.get("initial_text") in _REASONING_LABELS or (
        isinstance(finished, str) and finished.startswith(_REASONING_PREFIXES)
    )


def _without_citations(text: str) -> str:
    """The answer without ChatGPT's private-use citation markers (`\\ue200filecite...\\ue201`)."""
    if not _PRIVATE_USE.search(text):
        return text
    text = _CITATION.sub("", text)
    return _PRIVATE_USE.sub("", text).strip()


def _joined(parts: object) -> str:
    if not isinstance(parts, list):
        return ""
    return "\n".join(part for part in parts if isinstance(part, str) and part.strip())


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)
