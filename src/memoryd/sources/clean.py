"""Cleaning: what happens to every text before it leaves the machine or enters the store.

Given the readers' `Conversation`s and `Turn`s (or any text, such as an LLM's answer that is
about to be written), return cleaned copies and a `CleanStats` to log. Cleaning, in order:

0. terminal escape sequences, control characters (tab and line ends kept), bidirectional
   controls and zero-width characters are removed (`memoryd.charsafe.strip_unsafe`);
1. harness scaffolding is stripped (`<thinking>`, `<system-reminder>`, `<environment_context>`,
   slash-command markup ...; see `memoryd.sources._scrub`);
2. for turns only: blank-line runs are collapsed and the text trimmed (before redaction, so the
   rules see the line ends the text will have);
3. secrets are redacted to `[REDACTED:<kind>]`, the configured extra patterns included;
4. base64 payloads (data: URIs, long base64 runs) become `[base64 dropped: 12 KB]`;
5. for turns only: tool output is cut to a head-and-tail excerpt of at most
   `tool_output_chars` characters, which is redacted again (a cut can make a value end its
   line); a turn left without text is dropped; `trusted` is set to whether the role is user or
   assistant, whatever the reader said.

Secrets are redacted before anything is cut, so a secret is never half-kept at a cut.
Configuration comes in as parameters (from `cleaning.extra_patterns` and
`cleaning.tool_output_chars`); nothing here reads files, the environment or the clock.

Invariants: deterministic (same input and parameters, same output and stats); no secret a rule
of `memoryd.redaction` finds survives; cleaning a cleaned turn again changes nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from memoryd.charsafe import strip_unsafe
from memoryd.redaction import redact_counted
from memoryd.sources._scrub import drop_base64, excerpt, strip_scaffolding
from memoryd.sources.model import Conversation, Turn

DEFAULT_TOOL_OUTPUT_CHARS = 2000
TRUSTED_ROLES = frozenset({"user", "assistant"})


@dataclass(frozen=True)
class CleanStats:
    """What cleaning removed, for the logs: counts and sizes, never content.

    `redactions` counts redacted secrets by kind; the byte counts are UTF-8 sizes of what was
    removed by each step; `turns_dropped` counts turns left with no text.
    """

    redactions: Mapping[str, int] = field(default_factory=dict)
    scaffolding_bytes: int = 0
    base64_bytes: int = 0
    tool_output_bytes: int = 0
    turns_dropped: int = 0

    @property
    def bytes_dropped(self) -> int:
        """All bytes removed: scaffolding, base64 payloads and cut tool output."""
        return self.scaffolding_bytes + self.base64_bytes + self.tool_output_bytes

    def __add__(self, other: CleanStats) -> CleanStats:
        redactions = Counter(self.redactions)
        redactions.update(other.redactions)
        return CleanStats(
            redactions=dict(sorted(redactions.items())),
            scaffolding_bytes=self.scaffolding_bytes + other.scaffolding_bytes,
            base64_bytes=self.base64_bytes + other.base64_bytes,
            tool_output_bytes=self.tool_output_bytes + other.tool_output_bytes,
            turns_dropped=self.turns_dropped + other.turns_dropped,
        )

    def log_fields(self) -> dict[str, object]:
        """Return the fields to bind on a log event (sorted, so log lines are stable)."""
        return {
            "redactions": dict(sorted(self.redactions.items())),
            "bytes_dropped": self.bytes_dropped,
            "turns_dropped": self.turns_dropped,
        }


class CleanedText(NamedTuple):
    """A cleaned text and what cleaning removed from it."""

    text: str
    stats: CleanStats


def clean_text(text: str, *, extra_patterns: Sequence[str] = ()) -> CleanedText:
    """Given any text (a turn's, or an LLM answer about to be written), return it with
    scaffolding stripped, secrets redacted and base64 payloads dropped.

    Whitespace is otherwise left as it is. Raise ExtraPatternError if an extra pattern does not
    compile.
    """
    return _clean(text, extra_patterns, tidy=False)


_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


def _clean(text: str, extra_patterns: Sequence[str], *, tidy: bool) -> CleanedText:
    # Escape sequences, control, bidirectional and invisible characters go first: nothing
    # memoryd writes should carry them, and a zero-width character inside a key would hide it
    # from the rules.
    text, scaffolding_bytes = strip_scaffolding(strip_unsafe(text))
    if tidy:
        # Removed blocks leave runs of blank lines behind; one blank line keeps paragraphs
        # apart. Tidied before redaction, so that the rules see the final line ends.
        text = _BLANK_LINES.sub("\n\n", text).strip()
    text, redactions = redact_counted(text, extra_patterns)
    text, base64_bytes = drop_base64(text)
    stats = CleanStats(
        redactions=redactions, scaffolding_bytes=scaffolding_bytes, base64_bytes=base64_bytes
    )
    return CleanedText(text, stats)


_MAX_CUT_ROUNDS = 4


def _tool_excerpt(text: str, limit: int, extra_patterns: Sequence[str]) -> tuple[str, CleanStats]:
    # A cut gives the text around it a new context: `token: 000;` cut after `000` ends a line
    # with what now reads as a YAML secret. So an excerpt is redacted again, and cut again if
    # the markers made it longer; this settles in a round or two (the bound is a safety net).
    stats = CleanStats()
    for _ in range(_MAX_CUT_ROUNDS):
        text, cut_bytes = excerpt(text, limit)
        if not cut_bytes:
            break
        text, redactions = redact_counted(text, extra_patterns)
        stats += CleanStats(redactions=redactions, tool_output_bytes=cut_bytes)
        if not redactions:
            break
    return text, stats


def clean_turn(
    turn: Turn,
    *,
    extra_patterns: Sequence[str] = (),
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
) -> tuple[Turn | None, CleanStats]:
    """Given a turn, return the cleaned turn (None if no text is left) and what was removed.

    Tool output is cut to an excerpt of at most `tool_output_chars` characters (0 drops it).
    """
    text, stats = _clean(turn.text, extra_patterns, tidy=True)
    if turn.role == "tool":
        text, cut_stats = _tool_excerpt(text, tool_output_chars, extra_patterns)
        stats += cut_stats
    if not text:
        return None, stats + CleanStats(turns_dropped=1)
    return replace(turn, text=text, trusted=turn.role in TRUSTED_ROLES), stats


def clean_conversation(
    conversation: Conversation,
    *,
    extra_patterns: Sequence[str] = (),
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
) -> tuple[Conversation, CleanStats]:
    """Given a conversation, return it with every turn cleaned (empty turns dropped, order
    kept) and its title and metadata values redacted, plus the summed stats.
    """
    stats = CleanStats()
    turns: list[Turn] = []
    for turn in conversation.turns:
        cleaned, turn_stats = clean_turn(
            turn, extra_patterns=extra_patterns, tool_output_chars=tool_output_chars
        )
        stats += turn_stats
        if cleaned is not None:
            turns.append(cleaned)
    title = conversation.title
    if title is not None:
        title, redactions = redact_counted(strip_unsafe(title), extra_patterns)
        stats += CleanStats(redactions=redactions)
    metadata: dict[str, str] = {}
    for key, value in conversation.metadata.items():
        metadata[key], redactions = redact_counted(strip_unsafe(value), extra_patterns)
        stats += CleanStats(redactions=redactions)
    cleaned_conversation = replace(conversation, turns=tuple(turns), title=title, metadata=metadata)
    return cleaned_conversation, stats
