"""The shapes `memoryd context` prints: for a person, for a harness's start-of-session hook, or
as JSON, and the hard ceiling each hook format keeps under its harness's limit.

- `plain`: the Markdown bundle, cut to the token budget only.
- `claude-code`: the same Markdown, also at most `CLAUDE_CODE_CAP` characters. Claude Code adds a
  SessionStart hook's plain stdout (exit 0) to the model's context whole only while it is under
  10,000 characters; above that the model gets a 2,000-character preview and a file path, so a
  longer bundle would show little more than its first section. Characters are counted as
  JavaScript counts them (UTF-16 code units, so a character outside the Basic Multilingual Plane
  counts twice), and 500 are kept spare for the harness's own framing.
- `codex`: the JSON a Codex SessionStart hook answers with,
  `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": TEXT}}`, whose
  TEXT is at most `CODEX_CAP` tokens. Codex moves hook context above 2,500 tokens out of the
  prompt. The tokens are counted pessimistically (`worst_case_tokens`): one per 3 ASCII
  characters (tokenizers average about 4 on English and Markdown, fewer on ids and paths) and
  two per other character, 100 tokens below the limit for the harness's framing; that is about
  7,200 ASCII characters.
- `json`: the bundle with what it holds, what was cut or left out, and whether its reads were
  queued, for scripts and tests.

A ceiling is applied together with the token budget, at line boundaries (`memoryd.reading.context`
fits both), so the output never exceeds either.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

FORMATS: Final = ("plain", "claude-code", "codex", "json")


@dataclass(frozen=True)
class Ceiling:
    """At most `amount` of `unit`, as `measure` counts them in a text."""

    amount: int
    unit: str
    measure: Callable[[str], int]


def utf16_length(text: str) -> int:
    """The length of `text` in UTF-16 code units (what JavaScript's `length` gives)."""
    return len(text.encode("utf-16-le")) // 2


def worst_case_tokens(text: str) -> int:
    """A pessimistic token count of `text` (module docstring)."""
    ascii_count = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_count / 3) + 2 * (len(text) - ascii_count)


CLAUDE_CODE_CAP: Final = Ceiling(9_500, "characters", utf16_length)
CODEX_CAP: Final = Ceiling(2_400, "tokens", worst_case_tokens)
_CEILINGS: Final[Mapping[str, Ceiling]] = {"claude-code": CLAUDE_CODE_CAP, "codex": CODEX_CAP}
_HOOK_NAMES: Final[Mapping[str, str]] = {"claude-code": "Claude Code", "codex": "Codex"}


def ceiling_for(output_format: str) -> Ceiling | None:
    """The hard ceiling of a format (None: the token budget only)."""
    return _CEILINGS.get(output_format)


def limit_name(output_format: str) -> str:
    """How the bundle's last line names what it was cut to."""
    harness = _HOOK_NAMES.get(output_format)
    return f"the budget and {harness}'s hook limit" if harness else "the budget"


def render(output_format: str, text: str, metadata: Mapping[str, object]) -> str:
    """What `context` prints in `output_format` for the bundle `text`."""
    if output_format == "codex":
        hook = {"hookEventName": "SessionStart", "additionalContext": text}
        return json.dumps({"hookSpecificOutput": hook}, ensure_ascii=False) + "\n"
    if output_format == "json":
        return json.dumps({**metadata, "text": text}, indent=2, sort_keys=True) + "\n"
    return text
