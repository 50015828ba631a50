"""The fake model of the heartbeat tests: it files the transcript's `remember:` lines as facts,
and reads the prompt it was sent."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.fake_anthropic import RecordedRequest, ToolUse


def user_text(request: RecordedRequest) -> str:
    content = request.body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def transcript_of(request: RecordedRequest) -> str:
    text = user_text(request)
    match = re.search(r"<<<(MEMORYD-[0-9A-F]+) BEGIN>>>\n(.*)\n<<<\1 END>>>", text, re.DOTALL)
    assert match, "the transcript is fenced by a nonce delimiter"
    return match.group(2)


_REMEMBER = re.compile(r"^remember: (\w+) ([^:]+): (.+)$", re.MULTILINE)
_SECTION = re.compile(r"<<<(MEMORYD-[0-9A-F]+) BEGIN (s\d+)>>>\n(.*?)\n<<<\1 END \2>>>", re.DOTALL)


def sections_of(request: RecordedRequest) -> list[tuple[str | None, str]]:
    """The fenced transcripts of a request: (section id, text) each; the id is None when the
    request holds one conversation (`llm.sections_per_call`)."""
    found = [(section, body) for _nonce, section, body in _SECTION.findall(user_text(request))]
    return found or [(None, transcript_of(request))]


def marker_model(request: RecordedRequest) -> ToolUse:
    """A fake model that files `remember:` lines of the transcript(s) as significant facts
    (attributed to their section), and supersedes a known fact whose text it is told to replace
    (`replaces <id>`)."""
    facts: list[dict[str, Any]] = []
    entities: list[dict[str, Any]] = []
    for section, transcript in sections_of(request):
        for kind, name, fact in _REMEMBER.findall(transcript):
            supersedes = re.findall(r"replaces ([a-z0-9-]+-\d{3})", fact)
            text = re.sub(r"\s*replaces [a-z0-9-]+-\d{3}", "", fact)
            facts.append(
                {
                    "entity": {"name": name, "kind": kind},
                    "fact": text,
                    "category": "status",
                    "supersedes": supersedes,
                }
                | ({"section": section} if section else {})
            )
            entities.append({"name": name, "kind": kind, "significant": True})
    return ToolUse({"facts": facts, "entities": entities})
