"""Counts in words: `plural(1, "fact")` is "1 fact", `plural(2, "entity")` is "2 entities".

Every count memoryd prints for people (the heartbeat's line, its commit subject, `status`,
`explain`, systemd's `STATUS=`) goes through here, so singular and plural are right everywhere.
"""

from __future__ import annotations

# Nouns whose plural is not the regular one below.
_IRREGULAR = {"entity": "entities", "summary": "summaries", "was": "were", "is": "are"}


def plural_of(word: str) -> str:
    """The plural of a noun, or of a phrase's last word (`"tacit line"` -> `"tacit lines"`)."""
    head, _, last = word.rpartition(" ")
    if last in _IRREGULAR:
        noun = _IRREGULAR[last]
    elif last.endswith(("s", "x", "ch", "sh")):
        noun = last + "es"
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u"):
        noun = last[:-1] + "ies"
    else:
        noun = last + "s"
    return f"{head} {noun}" if head else noun


def plural(count: int, word: str) -> str:
    """`count` and the noun in the number it takes: "1 file", "0 files", "3 accesses"."""
    return f"{count} {word if count == 1 else plural_of(word)}"
