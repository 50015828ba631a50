"""Fitting a context bundle's sections within its limits (`memoryd.reading.context`, Fitting):
whole leading lines, each section its share first, the last line saying what is missing."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Final

from memoryd.llm.base import estimate_tokens
from memoryd.reading.accesses import QueuedReads
from memoryd.reading.formats import Ceiling

LONG_LINE: Final = 300
# The fraction of the limits each kind of section may take before any takes more (the kind's
# fraction is shared by its sections), so that a long tacit file cannot crowd out the rest.
SHARES: Final[dict[str, float]] = {
    "tacit": 0.25,
    "skills": 0.12,
    "routine": 0.08,
    "entity": 0.35,
    "note": 0.20,
}
HOW_TO_GET: Final = "`memoryd search QUERY`, or the MCP tools `search`, `get_entity` and `context`"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_HEADING = re.compile(r"^#{1,5}\s")
_FACT_ID = re.compile(r"\[([a-z0-9]+(?:-[a-z0-9]+)*-[0-9]{3,}(?:\s*,\s*[a-z0-9-]+)*)\]")


@dataclass(frozen=True)
class Section:
    title: str
    path: str
    body: str
    kind: str  # tacit, skills, routine, entity, note


@dataclass
class Bundle:
    """The fitted bundle: its text, what it holds and what it left out."""

    text: str
    tokens: int
    included: list[str] = field(default_factory=list)  # section paths, whole or cut
    cut: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)  # facts cited by what is included
    chars: int = 0
    reads: QueuedReads = field(default_factory=lambda: QueuedReads(0, queued=True))


def strip_title(text: str) -> str:
    """A file's text without its `# ` title (the section has its own heading), its own
    headings one level down so that they nest under the section's."""
    lines = text.strip().splitlines()
    if lines and re.match(r"^#\s", lines[0]):
        lines = lines[1:]
    return "\n".join("#" + line if _HEADING.match(line) else line for line in lines).strip()


def fit(
    sections: list[Section],
    *,
    agent: str,
    today: date,
    budget: int,
    ceiling: Ceiling | None = None,
    limit_label: str = "the budget",
) -> Bundle:
    """The bundle of `sections` within `budget` tokens and `ceiling` (module docstring)."""
    limits = [Ceiling(budget, "tokens", estimate_tokens), *([ceiling] if ceiling else [])]
    header = f"# Memory for {agent}, {today.isoformat()}"
    headings = [f"## {section.title} ({section.path})" for section in sections]
    bodies = [_units(strip_title(section.body)) for section in sections]
    widest = _footer([(section.path, True) for section in sections], limit_label)
    # The footer names every missing path when that fits in a quarter of the limits; else it
    # counts them, so that many sections with long paths cannot push a small budget over.
    compact = any(limit.measure(widest) > limit.amount // 4 for limit in limits)
    if compact:
        widest = _footer([(section.path, True) for section in sections], limit_label, compact)
    meter = _Meter(limits, reserved=[header, widest, ""])
    kept = [0] * len(sections)
    counts = {kind: sum(1 for s in sections if s.kind == kind) for kind in SHARES}
    for index, section in enumerate(sections):
        share = SHARES.get(section.kind, 0.0) / max(1, counts.get(section.kind, 1))
        kept[index] = meter.grow(headings[index], bodies[index], kept[index], share)
    for index in range(len(sections)):
        kept[index] = meter.grow(headings[index], bodies[index], kept[index], None)
    while True:
        bundle = _render(
            sections,
            headings=headings,
            bodies=bodies,
            kept=kept,
            header=header,
            limit_label=limit_label,
            compact=compact,
        )
        if not any(kept):
            return _clipped(bundle, limits)
        if all(limit.measure(bundle.text) <= limit.amount for limit in limits):
            return bundle
        last = max(index for index, count in enumerate(kept) if count)  # pragma: no cover
        kept[last] -= 1  # pragma: no cover - the meter overestimates; kept as a guarantee


class _Meter:
    """What is left of each limit as lines are taken; a line costs its measure plus its
    newline, which never undercounts the joined text."""

    def __init__(self, limits: list[Ceiling], *, reserved: list[str]) -> None:
        self._limits = limits
        self._left = [
            limit.amount - sum(self._cost(limit, t) for t in reserved) for limit in limits
        ]
        self._total = list(self._left)

    @staticmethod
    def _cost(limit: Ceiling, text: str) -> int:
        return limit.measure(text) + 1

    def grow(self, heading: str, body: list[str], kept: int, share: float | None) -> int:
        """Take more whole leading lines of `body` (the heading and its blank lines with the
        first); with `share`, only while the section stays within that fraction of the
        limits. Return how many lines are kept."""
        spent = [0] * len(self._limits)
        while kept < len(body):
            texts = [body[kept]] + ([heading, "", ""] if kept == 0 else [])
            costs = [sum(self._cost(limit, t) for t in texts) for limit in self._limits]
            if any(cost > left for cost, left in zip(costs, self._left, strict=True)):
                break
            if share is not None and any(
                used + cost > share * total
                for used, cost, total in zip(spent, costs, self._total, strict=True)
            ):
                break
            for position, cost in enumerate(costs):
                self._left[position] -= cost
                spent[position] += cost
            kept += 1
        return kept


def _render(
    sections: list[Section],
    *,
    headings: list[str],
    bodies: list[list[str]],
    kept: list[int],
    header: str,
    limit_label: str,
    compact: bool = False,
) -> Bundle:
    parts = [header]
    bundle = Bundle(text="", tokens=0)
    cited: list[str] = []
    missing: list[tuple[str, bool]] = []
    for section, heading, body, count in zip(sections, headings, bodies, kept, strict=True):
        if not count:
            bundle.left_out.append(section.path)
            missing.append((section.path, False))
            continue
        block = heading + "\n\n" + "\n".join(body[:count]).rstrip()
        parts.append(block)
        bundle.included.append(section.path)
        if count < len(body):
            bundle.cut.append(section.path)
            missing.append((section.path, True))
        cited += _cited(block) if section.kind == "entity" else []
    if missing:
        parts.append(_footer(missing, limit_label, compact))
    bundle.text = "\n\n".join(parts) + "\n"
    bundle.tokens = estimate_tokens(bundle.text)
    bundle.chars = len(bundle.text)
    bundle.fact_ids = list(dict.fromkeys(cited))
    return bundle


def _footer(missing: list[tuple[str, bool]], limit_label: str, compact: bool = False) -> str:
    """The one last line naming (or, `compact`, counting) what is not in the bundle and how to
    get it."""
    if compact:
        count = f"{len(missing)} section{'s' if len(missing) != 1 else ''}"
        return f"Left out to fit {limit_label}: {count}. Get them with {HOW_TO_GET}."
    items = ", ".join(f"the rest of {path}" if cut else path for path, cut in missing)
    return f"Left out to fit {limit_label}: {items}. Get them with {HOW_TO_GET}."


def _clipped(bundle: Bundle, limits: Sequence[Ceiling]) -> Bundle:
    """`bundle` (holding no section) within `limits`: its header dropped first (the last line
    says how to get what is missing), then characters, when a budget is too small for both:
    a budget too small for anything still gets no more than it allows."""
    text = bundle.text

    def over(candidate: str) -> bool:
        return any(limit.measure(candidate) > limit.amount for limit in limits)

    if over(text):
        text = text.rstrip("\n").split("\n")[-1] + "\n"
    if over(text):
        low, high = 0, len(text) - 1  # the longest prefix (plus its newline) that fits
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if not over(text[:middle] + "\n") else (low, middle - 1)
        text = text[:low] + "\n"
    bundle.text = text
    bundle.tokens = estimate_tokens(text)
    bundle.chars = len(text)
    return bundle


def _units(body: str) -> list[str]:
    """The lines of `body`, a line longer than `LONG_LINE` split after its sentences so that a
    cut can keep a paragraph's first sentences (a soft line break: the same Markdown). Lines in
    code fences and table rows are kept whole."""
    units: list[str] = []
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or len(line) <= LONG_LINE or line.lstrip().startswith("|"):
            units.append(line)
        else:
            units.extend(part for part in _SENTENCE_END.split(line) if part)
    return units


def _cited(text: str) -> list[str]:
    """The fact ids cited in `text`, in order."""
    return [part.strip() for match in _FACT_ID.findall(text) for part in match.split(",")]
