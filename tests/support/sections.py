"""A fake model for calls shared by several conversations (`llm.sections_per_call`): it files
the `remember:` lines of every section, each attributed to its section; what the sections tests
share."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.fake_anthropic import RecordedRequest, ToolUse
from tests.support.harness import Workspace
from tests.support.marker_model import user_text

_SECTION = re.compile(r"<<<(MEMORYD-[0-9A-F]+) BEGIN (s\d+)>>>\n(.*?)\n<<<\1 END \2>>>", re.DOTALL)
_SINGLE = re.compile(r"<<<(MEMORYD-[0-9A-F]+) BEGIN>>>\n(.*?)\n<<<\1 END>>>", re.DOTALL)
_REMEMBER = re.compile(r"^remember: (\w+) ([^:]+): (.+)$", re.MULTILINE)


def sections_of(request: RecordedRequest) -> list[tuple[str | None, str]]:
    text = user_text(request)
    found = [(section, body) for _nonce, section, body in _SECTION.findall(text)]
    return found or [(None, body) for _nonce, body in _SINGLE.findall(text)]


def section_model(request: RecordedRequest, *, attribute: bool = True) -> ToolUse:
    """Files the `remember:` lines of every section, each attributed to its section, plus one
    timeline line per section."""
    facts: list[dict[str, Any]] = []
    entities: list[dict[str, Any]] = []
    timeline: list[dict[str, Any]] = []
    for section, body in sections_of(request):
        where = {"section": section} if section and attribute else {}
        for kind, name, fact in _REMEMBER.findall(body):
            facts.append(
                {"entity": {"name": name, "kind": kind}, "fact": fact, "category": "status"} | where
            )
            entities.append({"name": name, "kind": kind, "significant": True})
        first = _REMEMBER.search(body)
        if first:
            timeline.append({"text": f"Talked about {first.group(2)}"} | where)
    return ToolUse({"facts": facts, "entities": entities, "timeline": timeline})


def normalized(ws: Workspace) -> dict[str, str]:
    return {path: text.replace(str(ws.root), "WS") for path, text in ws.memories().items()}
