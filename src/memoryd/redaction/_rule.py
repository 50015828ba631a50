"""What a secret rule is: a pattern (compiled lazily, when first searched with) and the part of
a match to redact. Shared by the built-in rules (`_secret_rules`, `_credential_rules`) and the
configured extra patterns (`memoryd.redaction`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

Span = tuple[int, int]
# A select function gets the match and the text the match was searched in before any
# lower-casing (same positions): a case-insensitive rule matches on lower-cased text, and a
# value's case tells code (`csrfToken`) from a secret.
Select = Callable[[re.Match[str], str], Span | None]


def whole_match(match: re.Match[str], original: str) -> Span | None:
    """Redact the whole match (the default)."""
    return match.span()


class Pattern(Protocol):
    """What redaction asks of a rule's pattern (a compiled `re.Pattern` is one)."""

    @property
    def groupindex(self) -> Mapping[str, int]: ...

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None: ...


class LazyPattern:
    """A regular expression compiled when first searched with: the log processor redacts every
    event, and most events bring in no rule at all (`memoryd.redaction` runs only the rules
    whose anchors a text holds), so a short-lived command compiles only the few it needs
    instead of every rule at import. Compiling is deterministic; two threads racing
    to compile compile the same pattern."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.compiled.groupindex

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(string, pos)


@dataclass(frozen=True)
class Rule:
    """One kind of secret: where it is (`pattern`) and which part of a match to hide (`select`).

    `anchors` are lower-case strings of which every match contains at least one: a text whose
    lower-cased form holds none of them is not searched at all (a plain substring test is much
    faster than a regex scan). No anchors means always search.
    """

    kind: str
    pattern: Pattern
    select: Select = whole_match
    anchors: tuple[str, ...] = ()
    # For case-insensitive rules: the same pattern without IGNORECASE, to run on the
    # lower-cased text, which Python's regex engine scans about ten times faster.
    folded: Pattern | None = None


def folding_rule(kind: str, source: str, select: Select, anchors: tuple[str, ...]) -> Rule:
    """Build a case-insensitive rule from a pattern whose letters are written in lower case."""
    pattern = LazyPattern(source, re.VERBOSE | re.IGNORECASE)
    return Rule(kind, pattern, select, anchors, LazyPattern(source, re.VERBOSE))
