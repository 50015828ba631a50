"""The `markers` provider: extraction without an LLM, from explicit marker lines only.

It lets memoryd run offline (the demo, air-gapped hosts, tests) and gives users a way to file a
memory deliberately. A marker is a line of a user or assistant turn — never tool output — that
starts, after optional whitespace or a list bullet, with one of these words (any case):

    remember: <kind> <Name>: <fact>     a fact about an entity (the entity counts as significant)
    supersede: <kind> <Name>: <fact-id>: <fact>
                                        a fact that replaces the entity's fact <fact-id>
    note: <text>                        a timeline entry at the turn's local time
    skill: <topic>: <tip>               a tier-1 skill of the conversation's agent
    routine-skill: <topic>: <tip>       a tier-2 skill of the source's routine
    tacit: <text>                       tacit knowledge about how the user works

The answer has the shape of the `record_memories` tool input, so it goes through the same
validation and the same filing as a model's answer. A marker the contract would refuse (a fact
over 1,000 characters, a name over 200, a topic over 100) is set aside as ignored on its own, so
one bad line never takes the others with it; and a chunk never holds more than `MAX_MARKERS`
marker lines (`memoryd.extractors.marker_lines`, counted by `memoryd.extractors.chunking`), so
a conversation with more markers than one answer may hold is split over chunks instead of
failing whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from zoneinfo import ZoneInfo

from memoryd.extractors.marker_lines import MARKER_LINE
from memoryd.sources.model import Turn
from memoryd.store.vocabulary import KINDS

_REMEMBER = re.compile(
    r"^(?P<kind>[a-z]+)[ \t]+(?P<name>[^:]+?)[ \t]*:[ \t]*(?P<fact>.+)$", re.IGNORECASE
)
_SUPERSEDED = re.compile(r"^(?P<id>[a-z0-9]+(?:-[a-z0-9]+)*-[0-9]{3,})[ \t]*:[ \t]*(?P<fact>.+)$")
_TOPIC_TIP = re.compile(r"^(?P<topic>[^:]+?)[ \t]*:[ \t]*(?P<tip>.+)$")

# The contract's limits (`memoryd.extractors.contract`): text, name and topic lengths.
MAX_TEXT: Final = 1000
MAX_NAME: Final = 200
MAX_TOPIC: Final = 100
MAX_FACT_ID: Final = 85


def _too_long(word: str, rest: str) -> bool:
    """Whether a marker's parts pass the contract's lengths (checked after parsing)."""
    if word in ("remember", "supersede"):
        parsed = _REMEMBER.match(rest)
        if parsed is None:
            return False
        replaced = _SUPERSEDED.match(parsed.group("fact")) if word == "supersede" else None
        fact = replaced.group("fact") if replaced else parsed.group("fact")
        return (
            len(parsed.group("name").strip()) > MAX_NAME
            or len(fact.strip()) > MAX_TEXT
            or (replaced is not None and len(replaced.group("id")) > MAX_FACT_ID)
        )
    if word in ("skill", "routine-skill"):
        parsed = _TOPIC_TIP.match(rest)
        return parsed is not None and (
            len(parsed.group("topic").strip()) > MAX_TOPIC
            or len(parsed.group("tip").strip()) > MAX_TEXT
        )
    return len(rest) > MAX_TEXT


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
        for match in MARKER_LINE.finditer(turn.text):
            word, rest = match.group("word").lower(), match.group("rest")
            if _too_long(word, rest):
                ignored.append(match.group(0).strip()[:200])
                continue
            if word in ("remember", "supersede"):
                parsed = _REMEMBER.match(rest)
                kind = parsed.group("kind").lower() if parsed else ""
                replaced = _SUPERSEDED.match(parsed.group("fact")) if parsed else None
                if parsed is None or kind not in KINDS or (word == "supersede" and not replaced):
                    ignored.append(match.group(0).strip())
                    continue
                name = parsed.group("name").strip()
                fact: dict[str, Any] = {
                    "entity": {"name": name, "kind": kind},
                    "fact": parsed.group("fact").strip(),
                    "category": "context",
                }
                if replaced is not None and word == "supersede":
                    fact["fact"] = replaced.group("fact").strip()
                    fact["supersedes"] = [replaced.group("id")]
                facts.append(fact)
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
