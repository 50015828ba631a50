"""Daily notes, `memory/YYYY-MM-DD.md`: the timeline of a day, plus facts still pending.

A note has a header (the date and a sentence saying what the file is), a `## Timeline` section of
entries `- HH:MM · agent · text`, and, when needed, a `## Pending facts` section holding facts
about names that do not qualify as entities yet (docs/store-format.md, Creating entities) as `-
**Name** (kind): fact`.

Invariants:
- appending is idempotent: an entry whose line equals (after `normalize_statement`) one already
  in its section is not added again, so re-running a heartbeat changes nothing;
- the timeline is ordered by time of day, ties by text; pending facts by text: the same set of
  entries always gives the same bytes, whatever order they arrived in;
- dates and times are the caller's, already in the configured time zone: nothing here reads a
  clock;
- anything a person added to the note (other sections, lines in ours) is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, time
from typing import Final

from memoryd.store.markdown import Section, join_sections, split_sections
from memoryd.store.text import fold, normalize_statement, one_line
from memoryd.worktree import FileTransaction

NOTES_DIR: Final = "memory"
TIMELINE: Final = "Timeline"
PENDING: Final = "Pending facts"
_INTROS: Final = {
    TIMELINE: "What the agents did and heard, by local time.",
    PENDING: (
        "Facts about names that are not entities yet; memoryd files them into the entity "
        "once it qualifies."
    ),
}
_NOTE_INTRO: Final = "Daily note filed by memoryd from the agents' conversations."
# memoryd's own sentences in a note (what the file is, what each of its sections is): readers
# such as the search index leave them out, they say nothing about the day.
TEMPLATE_LINES: Final = frozenset({_NOTE_INTRO, *_INTROS.values()})
# Not strftime("%A"): that follows the process locale, and the note must not depend on it.
_WEEKDAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_TIMED = re.compile(r"^- (\d{2}:\d{2}) ")


@dataclass(frozen=True)
class TimelineEntry:
    at: time  # local time of day
    agent: str
    text: str

    def line(self) -> str:
        return f"- {self.at.strftime('%H:%M')} · {one_line(self.agent)} · {one_line(self.text)}"


@dataclass(frozen=True)
class PendingNote:
    name: str
    kind: str
    fact: str

    def line(self) -> str:
        return f"- **{one_line(self.name)}** ({one_line(self.kind)}): {one_line(self.fact)}"


def note_path(day: date) -> str:
    """Store-relative path of the daily note of `day`."""
    return f"{NOTES_DIR}/{day.isoformat()}.md"


def add_timeline(tx: FileTransaction, day: date, entries: Iterable[TimelineEntry]) -> int:
    """Add the entries to the note of `day` (created if needed); return how many were new."""
    return _add_lines(tx, day, TIMELINE, [e.line() for e in entries if one_line(e.text)])


def add_pending_facts(tx: FileTransaction, day: date, facts: Iterable[PendingNote]) -> int:
    """Add pending facts to the note of `day` (created if needed); return how many were new."""
    return _add_lines(tx, day, PENDING, [f.line() for f in facts if one_line(f.fact)])


def _header(day: date) -> list[str]:
    return [
        f"# {day.isoformat()} ({_WEEKDAYS[day.weekday()]})",
        "",
        _NOTE_INTRO,
    ]


def _render_ours(section: Section, new_lines: list[str]) -> tuple[list[str], int]:
    """Our section's body with `new_lines` merged in, and how many were really new."""
    bullets = [line for line in section.lines if line.startswith("- ")]
    others = [
        line
        for line in section.lines
        if line.strip() and not line.startswith("- ") and line != _INTROS[section.title]
    ]
    seen = {normalize_statement(line) for line in bullets}
    added = 0
    for line in new_lines:
        key = normalize_statement(line)
        if key not in seen:
            seen.add(key)
            bullets.append(line)
            added += 1
    if section.title == TIMELINE:

        def order(line: str) -> tuple[str, str, str]:
            match = _TIMED.match(line)
            return (match[1] if match else "", fold(line), line)

    else:

        def order(line: str) -> tuple[str, str, str]:
            return ("", fold(line), line)

    body = [_INTROS[section.title], "", *others, *([""] if others else [])]
    return [*body, *sorted(bullets, key=order)], added


def _add_lines(tx: FileTransaction, day: date, title: str, new_lines: list[str]) -> int:
    path = note_path(day)
    existing = tx.read_text(path)
    preamble, sections = split_sections(existing) if existing is not None else (_header(day), [])
    ours = next((section for section in sections if section.title == title), None)
    if ours is None:
        ours = Section(title)
        sections.append(ours)
    ours.lines, added = _render_ours(ours, new_lines)
    # Nothing new: leave the file alone, even if a person formatted it differently.
    if added:
        tx.write_text(path, join_sections(preamble, sections))
    return added


def add_note_lines(tx: FileTransaction, day: date, title: str, lines: Iterable[str]) -> int:
    """Add bullet lines, as they are written, to the `title` section of the note of `day` (the
    sync's merge re-applies another clone's lines this way); return how many were new."""
    return _add_lines(tx, day, title, list(lines))
