"""Finding and redacting secrets in text, before it leaves the machine or enters the store.

A secret is replaced by the marker `[REDACTED:<kind>]` (kinds: `anthropic`, `openai`,
`aws-access-key-id`, `aws-secret-access-key`, `github`, `gitlab`, `slack`, `slack-webhook`,
`stripe`, `google-api-key`, `google-oauth`, `npm`, `pypi`, `sendgrid`, `jwt`, `private-key`,
`url-password`, `bearer`, `basic-auth`, `password`, `secret`, the provider kinds of
`memoryd.redaction._credential_rules`
(`vault`, `huggingface`, `digitalocean`, `telegram`, `azure`, ...),
and `custom` for the configured `cleaning.extra_patterns`). Where a secret sits in context only
the secret goes: the password of `scheme://user:pass@host`, the value of `password=...` or
`DB_PASS=...`, the token after `Bearer`, the password of `mysql -pPASS`, `curl -u user:PASS`,
`sshpass -p PASS` and of a `.netrc` entry, and the value of a secret stated in a sentence
(`memoryd.redaction._prose_rules`: "the wifi password is now X", "the PIN for the alarm is
4821", "login: bob / X").

This module is top-level (not under `sources`) because the store scans files for secrets before
committing them, and the store must not import the sources.

Invariants:
- deterministic: the same text and patterns give the same hits and the same output;
- `redact` is idempotent: it repeats until nothing is found, and no rule matches inside a marker
  (text is searched between existing markers), so `redact(redact(x)) == redact(x)`;
- overlapping hits merge into one span (their union), so no part of a secret survives because
  another rule matched a neighbouring part;
- linear time in the text for the built-in rules (see `memoryd.redaction._secret_rules`);
extra patterns
  are the configuration's responsibility.

Deliberate near-misses left alone: hex ids (git SHAs), UUIDs, prose about passwords ("password
is required", "the PIN pad is broken"), file paths,
placeholders (`********`, `<your-key>`, `${API_KEY}`, `$API_KEY`, `{{ secrets.X }}`, elided
`sk-ant-...`, the name of an environment variable) and code (`const apiKey = await ...`,
`isOAuthToken: boolean`, `{ _csrf_token: csrfToken }`): they stand for a secret without being
one, and keeping them keeps the text's meaning.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memoryd.errors import ConfigError
from memoryd.redaction._credential_rules import CONTEXT_RULES, PROVIDER_RULES
from memoryd.redaction._prose_rules import PROSE_RULES
from memoryd.redaction._rule import Pattern, Rule
from memoryd.redaction._secret_rules import BUILTIN_RULES

CUSTOM_KIND = "custom"
MARKER = re.compile(r"\[REDACTED:[a-z0-9-]{1,40}\]")


def marker(kind: str) -> str:
    """Return the text that replaces a secret of `kind`."""
    return f"[REDACTED:{kind}]"


class ExtraPatternError(ConfigError):
    """A configured extra pattern (cleaning.extra_patterns) is not a valid regular expression."""

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern = pattern
        super().__init__(
            None, [f"At 'cleaning.extra_patterns': {pattern!r} does not compile: {reason}"]
        )


@dataclass(frozen=True)
class SecretHit:
    """A secret found in a text: its kind and its span `text[start:end]`."""

    kind: str
    start: int
    end: int


@lru_cache(maxsize=32)
def _rules(extra_patterns: tuple[str, ...]) -> tuple[Rule, ...]:
    custom: list[Rule] = []
    for pattern in extra_patterns:
        try:
            custom.append(Rule(CUSTOM_KIND, re.compile(pattern)))
        except re.error as error:
            raise ExtraPatternError(pattern, str(error)) from None
    # Configured patterns come first: the operator named them on purpose, so their kind wins a
    # tie with a built-in rule.
    return (*custom, *PROVIDER_RULES, *BUILTIN_RULES, *CONTEXT_RULES, *PROSE_RULES)


@dataclass(frozen=True)
class _Plan:
    """The rules and, to skip most of them cheaply, which rules each anchor brings in."""

    rules: tuple[Rule, ...]
    always: frozenset[int]  # rules without anchors
    by_anchor: tuple[tuple[str, frozenset[int]], ...]

    def candidates(self, lowered: str) -> list[int]:
        """The rules worth running on `lowered`, in priority order: each distinct anchor is
        searched once, not once per rule that names it (what made short texts slow)."""
        chosen = set(self.always)
        for anchor, rules in self.by_anchor:
            if anchor in lowered:
                chosen |= rules
        return sorted(chosen)


@lru_cache(maxsize=32)
def _plan(extra_patterns: tuple[str, ...]) -> _Plan:
    rules = _rules(extra_patterns)
    by_anchor: dict[str, set[int]] = {}
    for index, rule in enumerate(rules):
        for anchor in rule.anchors:
            by_anchor.setdefault(anchor, set()).add(index)
    return _Plan(
        rules,
        frozenset(i for i, rule in enumerate(rules) if not rule.anchors),
        tuple((anchor, frozenset(found)) for anchor, found in sorted(by_anchor.items())),
    )


def _unmarked_segments(text: str) -> Iterator[tuple[int, int]]:
    """Yield the (start, end) spans of `text` that lie between redaction markers."""
    position = 0
    for found in MARKER.finditer(text):
        if found.start() > position:
            yield position, found.start()
        position = found.end()
    if position < len(text):
        yield position, len(text)


def _merge(hits: Iterable[tuple[int, int, int, str]]) -> list[SecretHit]:
    """Merge (start, priority, end, kind) hits into disjoint spans, in order of position."""
    merged: list[SecretHit] = []
    for start, _priority, end, kind in sorted(hits):
        if merged and start < merged[-1].end:
            last = merged[-1]
            merged[-1] = SecretHit(last.kind, last.start, max(last.end, end))
        else:
            merged.append(SecretHit(kind, start, end))
    return merged


def find_secrets(text: str, extra_patterns: Sequence[str] = ()) -> list[SecretHit]:
    """Given a text, return the secrets in it as disjoint hits sorted by position.

    `extra_patterns` are regular expressions whose whole match is a secret of kind "custom".
    Raise ExtraPatternError if one does not compile.
    """
    plan = _plan(tuple(extra_patterns))
    found: list[tuple[int, int, int, str]] = []
    for segment_start, segment_end in _unmarked_segments(text):
        whole = segment_start == 0 and segment_end == len(text)
        segment = text if whole else text[segment_start:segment_end]
        lowered = segment.lower()
        # Positions in the lower-cased text are positions in the text only if no character
        # changed length (a few, such as 'İ', become two); otherwise the slower pattern runs.
        aligned = len(lowered) == len(segment)
        for priority in plan.candidates(lowered):
            rule = plan.rules[priority]
            if rule.folded is not None and aligned:
                matches = _matches(rule.folded, lowered)
            else:
                matches = _matches(rule.pattern, segment)
            for match in matches:
                span = rule.select(match, segment)
                if span is not None and span[1] > span[0]:
                    start, end = span
                    found.append((segment_start + start, priority, segment_start + end, rule.kind))
    return _merge(found)


# A secret that starts inside the value of another one and ends after it starts with its key
# (`DB_PASSWORD=` in `Password: DB_PASSWORD='x'`), and a key with its quote and separator is
# shorter than this; see `_matches`.
_KEY_REACH = 64


def _matches(pattern: Pattern, text: str) -> Iterator[re.Match[str]]:
    """Like `pattern.finditer(text)`, except that after a match with a value part (the value of
    `password=...`) the search goes on from near the end of that value, not from the match's end.

    A value can hold the start of another secret of the same rule: `Password: DB_PASSWORD='x'`
    makes `DB_PASSWORD=` the first value. Searching only after the first match would miss the
    second, and redacting the first would then swallow its key for good. Going back at most
    `_KEY_REACH` characters keeps the scan linear.
    """
    position = 0
    while position <= len(text) and (match := pattern.search(text, position)):
        yield match
        position = max(match.end(), match.start() + 1)
        for name in pattern.groupindex:
            start, end = match.span(name)
            if name != "sep" and start > match.start():
                position = min(position, max(start, end - _KEY_REACH))


def _replace(text: str, hits: Sequence[SecretHit]) -> str:
    pieces: list[str] = []
    position = 0
    for hit in hits:
        pieces.append(text[position : hit.start])
        pieces.append(marker(hit.kind))
        position = hit.end
    pieces.append(text[position:])
    return "".join(pieces)


def redact_counted(text: str, extra_patterns: Sequence[str] = ()) -> tuple[str, dict[str, int]]:
    """Given a text, return it with every secret replaced by its marker, and counts by kind.

    Replacing a secret can change what its neighbours look like (a key that was glued to
    another becomes a word of its own), so the search repeats until it finds nothing. Each
    round turns at least one unmarked character into a marker and never touches a marker, so
    the loop ends; in practice the second round finds nothing.
    """
    counts: Counter[str] = Counter()
    while hits := find_secrets(text, extra_patterns):
        counts.update(hit.kind for hit in hits)
        text = _replace(text, hits)
    return text, dict(sorted(counts.items()))


def redact(text: str, extra_patterns: Sequence[str] = ()) -> str:
    """Given a text, return it with every secret replaced by `[REDACTED:<kind>]`."""
    return redact_counted(text, extra_patterns)[0]


def secret_kinds(text: str, extra_patterns: Sequence[str] = ()) -> list[str]:
    """Given a text (a store file about to be committed), return the sorted kinds of secrets in it.

    An empty list means the text is safe to commit.
    """
    return sorted({hit.kind for hit in find_secrets(text, extra_patterns)})
