"""The normalized conversation every reader produces and the pipeline consumes.

A reader turns one agent's on-disk transcripts into `Conversation`s made of `Turn`s. Every turn
carries provenance (file and line range, or byte range for non-line formats) so that a filed
fact can always be traced back to the words it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class Provenance:
    """Where a turn came from: a file and an inclusive 1-based line range.

    For formats that are not line-based (a ChatGPT export), `lines` is (0, 0) and `locator`
    names the record inside the file (e.g. the conversation id and message id).
    """

    file: str
    lines: tuple[int, int]
    locator: str | None = None


@dataclass(frozen=True)
class Turn:
    """One message of the dialogue, after format decoding (before or after cleaning)."""

    role: Role
    text: str
    timestamp: datetime  # aware, UTC
    provenance: Provenance
    sidechain: bool = False  # said inside a subagent / sidechain of the session
    trusted: bool = True  # False for tool output and anything else not said by user/assistant


@dataclass(frozen=True)
class Conversation:
    """New turns of one session of one agent, in order."""

    agent: str
    session_id: str
    source_format: str
    turns: tuple[Turn, ...]
    routine: str | None = None
    title: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
