"""Recorded model answers replayed through the fake Anthropic server, keyed by excerpt.

A recording is an oracle run folder (`/work/shared/tools/oracle/`): `requests/NNNN.json` holds
the body memoryd sent, `answers/NNNN.json` the answer given (`{"content": [{"type": "tool_use",
"name": ..., "input": {...}}]}`). A request is recognised by its *key*: the tool it asks for and
the conversation excerpt(s) between memoryd's nonce fences, with the nonce taken out, so that a
change of the prompt's wording or of the context shown around the excerpt keeps the recording
usable. A request without a fenced excerpt is keyed by the fact ids it shows (a summary rewrite:
the entity's facts), else by its whole user text without nonces (a skills consolidation).

`replay_handler(folder)` is a `FakeAnthropicServer` handler: a request with no recorded answer
raises `NoRecordingError` naming the start of its excerpt, which the server keeps in
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
_FACT_ID = re.compile(r"(?<![\w-])[a-z0-9][a-z0-9-]*-\d{3,}(?![\w-])")


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
    fact_ids = sorted(set(_FACT_ID.findall(text)))
    if fact_ids:
        return forced_tool(body) + "\nfacts " + " ".join(fact_ids)
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
            tool, _, excerpt = key.partition("\n")
            snippet = " ".join(excerpt.split())[:160]
            raise NoRecordingError(f"no recording for {tool}, excerpt {snippet!r}")
        return answer_from(recorded[key])

    return handle


def recording_handler(
    inner: Callable[[RecordedRequest], Answer], folder: Path
) -> Callable[[RecordedRequest], Answer]:
    """`inner`'s answers, each written with its request in the oracle's layout (for tests of the
    replay: a recording made without the oracle)."""
    (folder / "requests").mkdir(parents=True, exist_ok=True)
    (folder / "answers").mkdir(parents=True, exist_ok=True)

    def handle(request: RecordedRequest) -> Answer:
        answer = inner(request)
        number = f"{len(list((folder / 'requests').glob('*.json'))) + 1:04d}"
        body = json.dumps(request.body, indent=2, ensure_ascii=False)
        (folder / "requests" / f"{number}.json").write_text(body + "\n", encoding="utf-8")
        if isinstance(answer, ToolUse):
            block = {
                "type": "tool_use",
                "name": answer.tool_name or forced_tool(request.body),
                "input": dict(answer.input),
            }
        else:
            block = {"type": "text", "text": getattr(answer, "text", "")}
        document = json.dumps({"content": [block]}, indent=2, ensure_ascii=False)
        (folder / "answers" / f"{number}.json").write_text(document + "\n", encoding="utf-8")
        return answer

    return handle


def write_baseline(card_path: Path, run: Path) -> Path:
    """`RUN/baseline.json`: each category's score of a `memoryd eval --json` scorecard."""
    card = json.loads(card_path.read_text(encoding="utf-8"))
    scores = {name: category["score"] for name, category in card["categories"].items()}
    baseline = {"model": card.get("model"), "categories": scores}
    path = run / "baseline.json"
    path.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    # python -m tests.fakes.replay baseline CARD.json RUN
    import sys

    if len(sys.argv) != 4 or sys.argv[1] != "baseline":
        sys.exit("usage: python -m tests.fakes.replay baseline CARD.json RUN")
    print(write_baseline(Path(sys.argv[2]), Path(sys.argv[3])))
