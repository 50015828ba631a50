"""Merging a daily note by meaning (for `memoryd.sync._merge`): the bullets this host added to its
Timeline and Pending facts sections are added to the remote's note the way a heartbeat adds them
(deduplicated, in the section's order), so the merged note reads as if one host had filed all.

Used only when that accounts for every line this host added; anything else (a hand edit
committed on this host) is left to the line-by-line merge.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path, PurePosixPath

from memoryd.errors import StoreError
from memoryd.store.markdown import split_sections
from memoryd.store.notes import NOTES_DIR, PENDING, TIMELINE, add_note_lines

_NOTE = re.compile(rf"^{NOTES_DIR}/(\d{{4}}-\d{{2}}-\d{{2}})\.md$")


def note_day(store_path: str) -> date | None:
    """The day of a daily note's path, or None for any other file."""
    match = _NOTE.match(store_path)
    if match is None:
        return None
    try:
        return date.fromisoformat(match[1])
    except ValueError:
        return None


def merge_note(day: date, base: str, ours: str, theirs: str) -> str | None:
    """The remote's note with this host's new bullets added; None when this host changed more
    than bullets of those sections."""
    before, mine = _bullets(base), _bullets(ours)
    added = {
        title: [line for line in lines if line not in before.get(title, [])]
        for title, lines in mine.items()
    }
    note = _OneNote(note_path_of(day), theirs)
    for title in (TIMELINE, PENDING):
        if added.get(title):
            add_note_lines(note, day, title, added[title])
    merged = note.text.splitlines()
    new_here = [line for line in ours.splitlines() if line not in base.splitlines()]
    return note.text if all(line in merged for line in new_here) else None


def note_path_of(day: date) -> str:
    return f"{NOTES_DIR}/{day.isoformat()}.md"


def _bullets(text: str) -> dict[str, list[str]]:
    _preamble, sections = split_sections(text)
    return {
        section.title: [line for line in section.lines if line.startswith("- ")]
        for section in sections
        if section.title in (TIMELINE, PENDING)
    }


class _OneNote:
    """A FileTransaction holding one note in memory (the merge never touches the disk)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text

    @property
    def root(self) -> Path:
        return Path("/nonexistent-memoryd-merge")

    def read_text(self, relative: str) -> str | None:
        return self.text if relative == self.path else None

    def write_text(self, relative: str, text: str) -> None:
        if relative != self.path:
            raise StoreError(f"a note merge writes only {self.path}, not {relative}")
        self.text = text

    def exists(self, relative: str) -> bool:
        return relative == self.path or PurePosixPath(self.path).is_relative_to(relative)

    def list_dir(self, relative: str) -> list[str]:
        return []

    def move_dir(self, source: str, destination: str) -> None:
        raise StoreError("a note merge moves nothing")

    def remove(self, relative: str) -> None:
        raise StoreError("a note merge removes nothing")
