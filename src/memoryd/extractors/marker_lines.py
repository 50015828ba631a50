"""What a marker line is (`remember:`, `supersede:`, `note:`, `skill:`, `routine-skill:`,
`tacit:`), and how many one chunk may hold: shared by the markers provider
(`memoryd.extractors.markers`) and the chunker, which must not load the provider to count them.
"""

from __future__ import annotations

import re
from typing import Final

MARKER_LINE = re.compile(
    r"^[ \t]*(?:[-*+\u2022][ \t]+|\d+[.)][ \t]+)?"
    r"(?P<word>remember|supersede|note|skill|routine-skill|tacit)[ \t]*:[ \t]*(?P<rest>.+?)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)

# The fewest items a list of one answer holds (skills, tacit; `memoryd.extractors.contract`)
# bounds the marker lines of one chunk.
MAX_MARKERS: Final = 50


def marker_count(text: str) -> int:
    """How many marker lines `text` holds."""
    return sum(1 for _ in MARKER_LINE.finditer(text))
