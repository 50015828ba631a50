"""Recorded model answers replayed through the fake Anthropic server, keyed by excerpt.

A recording is an oracle run folder (`/work/shared/tools/oracle/`): `requests/NNNN.json` holds
the body memoryd sent, `answers/NNNN.json` the answer given (`{"content": [{"type": "tool_use",
"name": ..., "input": {...}}]}`). A request is recognised by its *key*: the tool it asks for and
the conversation excerpt(s) between memoryd's nonce fences, with the nonce taken out, so that a
change of the prompt's wording or of the context shown around the excerpt keeps the recording
usable. A request without a fenced excerpt (a summary rewrite, a skills consolidation) is keyed
by its whole user text, nonces and fact ids' order aside.

`replay_handler(folder)` is a `FakeAnthropicServer` handler: a request with no recorded answer
raises `NoRecordingError` naming the first line of its excerpt, which the server keeps in
`handler_errors` and answers with a 500, so the test fails naming what was not recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_wire import Answer, RecordedRequest, Text, ToolUse

_FENCED = re.compile(r"<<<(MEMORYD-[0-9A-F]+) BEGIN>>>\n?(.*?)\n?<<<\1 END>>>", re.DOTALL)
_NONCE = re.compile(r"MEMORYD-[0-9A-F]{8,}")


class NoRecordingError(LookupError):
    """A request the recording has no answer for."""


def user_text(body: Mapping[str, Any]) -> str:
    pieces: list[str] = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            pieces.extend(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "\n".join(pieces)


def forced_tool(body: Mapping[str, Any]) -> str:
    choice = body.get("tool_choice") or {}
    if isinstance(choice, dict) and choice.get("name"):
        return str(choice["name"])
    tools = body.get("tools") or []
    return str(tools[0].get("name", "")) if tools else ""


def request_key(body: Mapping[str, Any]) -> str:
    """The tool and the excerpt(s), without nonces (see the module docstring)."""
    text = user_text(body)
    excerpts = [match.group(2).strip() for match in _FENCED.finditer(text)]
    if excerpts:
        return forced_tool(body) + "\n" + "\n---\n".join(excerpts)
    return forced_tool(body) + "\n" + _NONCE.sub("MEMORYD-NONCE", text).strip()


def load_recording(folder: Path) -> dict[str, Mapping[str, Any]]:
    """Key -> answer document of every answered request of the run in `folder`."""
    recorded: dict[str, Mapping[str, Any]] = {}
    for request in sorted((folder / "requests").glob("*.json")):
        answer = folder / "answers" / request.name
        if not answer.is_file():
            continue
        body = json.loads(request.read_text(encoding="utf-8"))
        recorded[request_key(body)] = json.loads(answer.read_text(encoding="utf-8"))
    return recorded


def answer_from(document: Mapping[str, Any]) -> Answer:
    for block in document.get("content", []):
        if block.get("type") == "tool_use":
            return ToolUse(dict(block.get("input") or {}), tool_name=block.get("name"))
    texts = [str(b.get("text", "")) for b in document.get("content", []) if b.get("type") == "text"]
    return Text("".join(texts))


def replay_handler(folder: Path) -> Callable[[RecordedRequest], Answer]:
    recorded = load_recording(folder)

    def handle(request: RecordedRequest) -> Answer:
        key = request_key(request.body)
        if key not in recorded:
            first = next((line for line in key.splitlines()[1:] if line.strip()), "")
            raise NoRecordingError(f"no recording for {key.splitlines()[0]}: {first[:120]!r}")
        return answer_from(recorded[key])

    return handle
