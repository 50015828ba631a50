"""What the search index holds of each store file: the entries, and the walk that finds files.

One entry per fact of an `items.json` (found by its text and its entity's names) and one per
content line of a summary, daily note, skills file or the tacit file (headings and blank lines
are not entries), each with its store-relative path and 1-based line. See
`memoryd.reading.search` for how they are ranked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.store.entities import ITEMS_FILE, LIFE, SUMMARY_FILE
from memoryd.store.items import parse_items
from memoryd.store.notes import NOTES_DIR

log = get_logger(__name__)

# Ends at "\Z": "$" also matches before a final newline ("acme\n").
NOTE_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md\Z")
_ID_LINE = re.compile(r'^\s*"id":\s*"([^"]+)"')


@dataclass(frozen=True)
class Entry:
    kind: str
    id: str
    ref: str | None
    path: str
    line: int
    text: str
    status: str | None = None
    last_used: date | None = None
    uses: int = 0
    about: str = ""  # more words to find it by (its entity's name), not shown


def walk(
    root: str, folder: str, *, recursive: bool = True
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(store-relative path, entry) of every regular file below `folder`; hidden names and
    symbolic links are skipped."""
    pending = [folder]
    while pending:
        relative = pending.pop()
        try:
            scan = os.scandir(os.path.join(root, relative))
        except OSError:
            continue
        with scan:
            for entry in scan:
                if entry.name.startswith("."):
                    continue
                path = f"{relative}/{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    if recursive:
                        pending.append(path)
                elif entry.is_file(follow_symlinks=False):
                    yield path, entry


def stamp(entry: os.DirEntry[str]) -> tuple[int, int, int]:
    stat = entry.stat(follow_symlinks=False)
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


def _fact_entries(absolute: Path, path: str, text: str, ref: str | None, names: str) -> list[Entry]:
    try:
        facts = parse_items(absolute, text)
    except CorruptFileError as error:
        log.warning("search.file_skipped", path=path, reason=error.reason)
        return []
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = _ID_LINE.match(line)
        if match:
            lines.setdefault(match.group(1), number)
    return [
        Entry(
            kind="fact",
            id=fact.id,
            ref=ref,
            path=path,
            line=lines.get(fact.id, 1),
            text=fact.fact,
            status=fact.status,
            last_used=fact.last_accessed,
            uses=fact.access_count,
            about=names,
        )
        for fact in facts
    ]


def _line_entries(
    kind: str,
    path: str,
    text: str,
    ref: str | None,
    *,
    last_used: date | None = None,
    about: str = "",
) -> list[Entry]:
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        entries.append(
            Entry(
                kind=kind,
                id=f"{path}:{number}",
                ref=ref,
                path=path,
                line=number,
                text=stripped,
                last_used=last_used,
                about=about,
            )
        )
    return entries


def parse_file(
    path: str, text: str, refs: dict[str, tuple[str, str]], tacit_file: str, root: Path
) -> list[Entry]:
    """The entries of one store file (module docstring)."""
    ref, names = refs.get(path, (None, ""))
    if path.endswith(f"/{ITEMS_FILE}") and path.startswith(f"{LIFE}/"):
        return _fact_entries(root / path, path, text, ref, names)
    if path.endswith(f"/{SUMMARY_FILE}") and path.startswith(f"{LIFE}/"):
        return _line_entries("summary", path, text, ref, about=names)
    if path.startswith(f"{NOTES_DIR}/"):
        match = NOTE_NAME.match(path.removeprefix(f"{NOTES_DIR}/"))
        day = date.fromisoformat(match.group(1)) if match else None
        return _line_entries("note", path, text, None, last_used=day)
    if path == tacit_file:
        return _line_entries("tacit", path, text, None)
    agent = path.split("/")[1] if path.count("/") >= 2 else None
    return _line_entries("skill", path, text, agent)
