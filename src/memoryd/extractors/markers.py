"""The `markers` provider: extraction without an LLM, from explicit marker lines only.

It lets memoryd run offline (the demo, air-gapped hosts, tests) and gives users a way to file a
memory deliberately. A marker is a line of a user or assistant turn — never tool output — that
starts, after optional whitespace or a list bullet, with one of these words (any case):

    remember: <kind> <Name>: <fact>     a fact about an entity (the entity counts as significant)
    note: <text>                        a timeline entry at the turn's local time
    skill: <topic>: <tip>               a tier-1 skill of the conversation's agent
    routine-skill: <topic>: <tip>       a tier-2 skill of the source's routine
    tacit: <text>                       tacit knowledge about how the user works

The answer has the shape of the `record_memories` tool input, so it goes through the same
validation and the same filing as a model's answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from memoryd.sources.model import Turn
from memoryd.store.vocabulary import KINDS

_MARKER = re.compile(
    r"^[ \t]*(?:[-*+\u2022][ \t]+|\d+[.)][ \t]+)?"
    r"(?P<word>remember|note|skill|routine-skill|tacit)[ \t]*:[ \t]*(?P<rest>.+?)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_REMEMBER = re.compile(
    r"^(?P<kind>[a-z]+)[ \t]+(?P<name>[^:]+?)[ \t]*:[ \t]*(?P<fact>.+)$", re.IGNORECASE
)
_TOPIC_TIP = re.compile(r"^(?P<topic>[^:]+?)[ \t]*:[ \t]*(?P<tip>.+)$")


@dataclass
class MarkerAnswer:
    """A `record_memories` input built from marker lines, plus the lines that did not parse."""

    tool_input: dict[str, Any]
    ignored: list[str] = field(default_factory=list)


def extract_markers(turns: Sequence[Turn], zone: ZoneInfo, routine: str | None) -> MarkerAnswer:
    """Given the turns of one chunk, return the memories their marker lines state."""
    facts: list[dict[str, Any]] = []
    entities: dict[tuple[str, str], dict[str, Any]] = {}
    timeline: list[dict[str, Any]] = []
    skills: list[dict[str, Any]] = []
    tacit: list[str] = []
    ignored: list[str] = []
    for turn in turns:
        if turn.role not in ("user", "assistant") or not turn.trusted:
            continue
        for match in _MARKER.finditer(turn.text):
            word, rest = match.group("word").lower(), match.group("rest")
            if word == "remember":
                parsed = _REMEMBER.match(rest)
                kind = parsed.group("kind").lower() if parsed else ""
                if parsed is None or kind not in KINDS:
                    ignored.append(match.group(0).strip())
                    continue
                name = parsed.group("name").strip()
                facts.append(
                    {
                        "entity": {"name": name, "kind": kind},
                        "fact": parsed.group("fact").strip(),
                        "category": "context",
                    }
                )
                entities.setdefault(
                    (name.lower(), kind), {"name": name, "kind": kind, "significant": True}
                )
            elif word == "note":
                time = turn.timestamp.astimezone(zone).strftime("%H:%M")
                timeline.append({"time": time, "text": rest})
            elif word in ("skill", "routine-skill"):
                parsed = _TOPIC_TIP.match(rest)
                if parsed is None:
                    ignored.append(match.group(0).strip())
                    continue
                skills.append(
                    {
                        "topic": parsed.group("topic").strip(),
                        "tip": parsed.group("tip").strip(),
                        # Without a routine on the source the tip is still kept, as tier 1.
                        "routine": word == "routine-skill" and routine is not None,
                    }
                )
            else:
                tacit.append(rest)
    tool_input: dict[str, Any] = {
        "facts": facts,
        "entities": list(entities.values()),
        "timeline": timeline,
        "skills": skills,
        "tacit": tacit,
        "accessed": [],
    }
    return MarkerAnswer(tool_input=tool_input, ignored=ignored)
