"""Cutting conversations into chunks: one conversation, one calendar day, a bounded size.

A chunk is the unit of one LLM call (docs/llm-contract.md). It never spans two conversations or two
days
(days in the configured time zone). A day longer than the token budget is split at turn
boundaries, greedily from its start, so the same turns always give the same chunks; a single turn
longer than the budget is split into pieces, each keeping the turn's provenance. A chunk also
holds at most `MAX_MARKERS` marker lines (`memoryd.extractors.marker_lines`): more than one answer
may hold would make the chunk fail for ever, so a day with more is split the same way (a turn
with more, at line boundaries).

Every chunk has a stable `key` (what it covers and what it says), used by the journal to recognise
an answer already paid for and by the failure counter to recognise the same chunk next time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from memoryd.extractors.marker_lines import MAX_MARKERS, marker_count
from memoryd.llm.base import estimate_tokens
from memoryd.sources.model import Conversation, Provenance, Turn

TokenEstimator = Callable[[str], int]


@dataclass(frozen=True)
class Chunk:
    agent: str
    session_id: str
    source_format: str
    routine: str | None
    day: date
    part: int
    turns: tuple[Turn, ...]
    zone: ZoneInfo
    # The reprocess request reading this chunk again (`memoryd.extractors.rereads`): part of
    # its key, so that its answer is never mistaken for the one the first reading filed.
    reread: str | None = None

    @property
    def has_dialogue(self) -> bool:
        """Whether any user or assistant text is left (tool output alone is never sent)."""
        return any(turn.role in ("user", "assistant") and turn.text.strip() for turn in self.turns)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({turn.provenance.file for turn in self.turns}))

    @property
    def digest(self) -> str:
        """sha256 of what the chunk says, turn by turn."""
        hasher = hashlib.sha256()
        for turn in self.turns:
            hasher.update(f"{turn.role}\0{turn.timestamp.isoformat()}\0{turn.text}\0".encode())
        return hasher.hexdigest()

    @property
    def key(self) -> str:
        """A stable identity: agent, session, day, where the turns came from, and their digest."""
        first, last = self.turns[0].provenance, self.turns[-1].provenance
        where = f"{first.file}:{first.lines[0]}-{last.file}:{last.lines[1]}"
        raw = f"{self.agent}\0{self.session_id}\0{self.day.isoformat()}\0{where}\0{self.digest}"
        if self.reread is not None:
            raw += f"\0reread:{self.reread}"
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    @property
    def line_range(self) -> tuple[int, int]:
        return self.turns[0].provenance.lines[0], self.turns[-1].provenance.lines[1]

    def render(self) -> str:
        """The transcript text as the model sees it: one block per turn, local times."""
        agent = self.agent if self.source_format == REMEMBERED_FORMAT else None
        return "\n\n".join(render_turn(turn, self.zone, remembered_by=agent) for turn in self.turns)


# The source format of an agent's remembered queue (`memoryd.jobs.remembered`): its turns are
# the agent's own words, shown as such, never as the user's.
REMEMBERED_FORMAT = "remembered"


def render_turn(turn: Turn, zone: ZoneInfo, *, remembered_by: str | None = None) -> str:
    time = turn.timestamp.astimezone(zone).strftime("%H:%M")
    speaker = turn.role if turn.trusted else f"{turn.role} (untrusted output)"
    if remembered_by is not None:
        speaker = f"assistant (agent {remembered_by}, asking memoryd to remember; not the user)"
    if turn.sidechain:
        speaker += ", subagent"
    return f"[{time}] {speaker}:\n{turn.text}"


def cut_chunks(
    conversation: Conversation,
    zone: ZoneInfo,
    token_budget: int,
    estimate: TokenEstimator = estimate_tokens,
) -> list[Chunk]:
    """Given a conversation, return its chunks in order. Days are dates in `zone`."""
    chunks: list[Chunk] = []
    for day, turns in _by_day(conversation.turns, zone):
        pieces = [
            marked
            for turn in turns
            for piece in _split_turn(turn, token_budget, estimate)
            for marked in _split_markers(piece)
        ]
        for part, group in enumerate(_pack(pieces, token_budget, estimate)):
            chunks.append(
                Chunk(
                    agent=conversation.agent,
                    session_id=conversation.session_id,
                    source_format=conversation.source_format,
                    routine=conversation.routine,
                    day=day,
                    part=part,
                    turns=tuple(group),
                    zone=zone,
                )
            )
    return chunks


def _by_day(turns: tuple[Turn, ...], zone: ZoneInfo) -> Iterator[tuple[date, list[Turn]]]:
    current: date | None = None
    group: list[Turn] = []
    for turn in turns:
        day = turn.timestamp.astimezone(zone).date()
        if current is not None and day != current:
            yield current, group
            group = []
        current = day
        group.append(turn)
    if current is not None and group:
        yield current, group


# Room for the turn's header line when it is rendered.
_TURN_OVERHEAD = 12


def _cost(turn: Turn, estimate: TokenEstimator) -> int:
    return estimate(turn.text) + _TURN_OVERHEAD


def _split_turn(turn: Turn, budget: int, estimate: TokenEstimator) -> list[Turn]:
    if _cost(turn, estimate) <= budget:
        return [turn]
    # Split on line boundaries where possible, so pieces stay readable.
    pieces: list[Turn] = []
    room = max(1, budget - _TURN_OVERHEAD)
    text = turn.text
    while text:
        cut = _fitting_prefix(text, room, estimate)
        pieces.append(replace(turn, text=text[:cut]))
        text = text[cut:]
    return pieces


def _fitting_prefix(text: str, room: int, estimate: TokenEstimator) -> int:
    """Length of the longest prefix (ending at a line break where one is near) within `room`."""
    if estimate(text) <= room:
        return len(text)
    low, high = 1, len(text)  # estimate(text[:low]) is assumed to fit: one character always does
    while low < high:
        middle = (low + high + 1) // 2
        if estimate(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    newline = text.rfind("\n", 0, low)
    return newline + 1 if newline > low // 2 else low


def _split_markers(turn: Turn) -> list[Turn]:
    """The turn, in pieces of at most MAX_MARKERS marker lines each (cut at line breaks)."""
    if marker_count(turn.text) <= MAX_MARKERS:
        return [turn]
    pieces: list[Turn] = []
    lines: list[str] = []
    markers = 0
    for line in turn.text.splitlines(keepends=True):
        marked = marker_count(line)
        if lines and markers + marked > MAX_MARKERS:
            pieces.append(replace(turn, text="".join(lines)))
            lines, markers = [], 0
        lines.append(line)
        markers += marked
    if lines:
        pieces.append(replace(turn, text="".join(lines)))
    return pieces


def _pack(turns: list[Turn], budget: int, estimate: TokenEstimator) -> Iterator[list[Turn]]:
    group: list[Turn] = []
    used = markers = 0
    for turn in turns:
        cost = _cost(turn, estimate)
        marked = marker_count(turn.text)
        if group and (used + cost > budget or markers + marked > MAX_MARKERS):
            yield group
            group, used, markers = [], 0, 0
        group.append(turn)
        used += cost
        markers += marked
    if group:
        yield group


def chunk_to_json(chunk: Chunk) -> dict[str, object]:
    """The whole chunk as JSON-able data: journal plans and quarantined chunks keep it, so a
    re-queued chunk can be processed again after its transcript is gone."""
    document: dict[str, object] = {
        "agent": chunk.agent,
        "session_id": chunk.session_id,
        "source_format": chunk.source_format,
        "routine": chunk.routine,
        "day": chunk.day.isoformat(),
        "part": chunk.part,
        "zone": chunk.zone.key,
        "key": chunk.key,
        "turns": [
            {
                "role": turn.role,
                "text": turn.text,
                "timestamp": turn.timestamp.isoformat(),
                "file": turn.provenance.file,
                "lines": list(turn.provenance.lines),
                "locator": turn.provenance.locator,
                "sidechain": turn.sidechain,
                "trusted": turn.trusted,
            }
            for turn in chunk.turns
        ],
    }
    if chunk.reread is not None:
        document["reread"] = chunk.reread
    return document


def chunk_from_json(data: Mapping[str, Any]) -> Chunk:
    """Rebuild a chunk from `chunk_to_json` output. Raise KeyError/ValueError if it is not one."""
    turns = tuple(
        Turn(
            role=item["role"],
            text=str(item["text"]),
            timestamp=datetime.fromisoformat(item["timestamp"]),
            provenance=Provenance(
                file=str(item["file"]),
                lines=(int(item["lines"][0]), int(item["lines"][1])),
                locator=item.get("locator"),
            ),
            sidechain=bool(item.get("sidechain", False)),
            trusted=bool(item.get("trusted", True)),
        )
        for item in data["turns"]
    )
    if not turns:
        raise ValueError("a chunk has at least one turn")
    return Chunk(
        agent=str(data["agent"]),
        session_id=str(data["session_id"]),
        source_format=str(data["source_format"]),
        routine=data.get("routine"),
        day=date.fromisoformat(data["day"]),
        part=int(data["part"]),
        turns=turns,
        zone=ZoneInfo(str(data["zone"])),
        reread=None if data.get("reread") is None else str(data["reread"]),
    )
