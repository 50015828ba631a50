"""What the search index holds of each store file: the entries, and the walk that finds files.

One entry per fact of an `items.json` (found by its text and its entity's names) and one per
content line of a summary, daily note, skills file or the tacit file (headings and blank lines
are not entries), each with its store-relative path and 1-based line. memoryd's own template
sentences are not entries: a daily note's header and section intros (`notes.TEMPLATE_LINES`),
the tacit file's header, and a summary's all-cold sentence; they say the same in every file and
would answer every question. A fact carries its date, a note line its day, a summary line the
fact ids it cites (its hit is folded into theirs). See
`memoryd.reading.search` for how they are ranked.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.store.entities import ITEMS_FILE, LIFE, SUMMARY_FILE
from memoryd.store.items import parse_items
from memoryd.store.notes import NOTES_DIR, TEMPLATE_LINES
from memoryd.store.summaries import CITATION, CITED_ID, all_cold_body
from memoryd.store.tacit import HEADER

log = get_logger(__name__)

# Ends at "\Z": "$" also matches before a final newline ("acme\n").
NOTE_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md\Z")
# A daily note's timeline line, `- HH:MM · agent · text` (`memoryd.store.notes`): its agent.
_TIMELINE_AGENT = re.compile(r"^- \d{2}:\d{2} · (.+?) · ")
_ID_LINE = re.compile(r'^\s*"id":\s*"([^"]+)"')
_TACIT_TEMPLATE = frozenset(
    line.strip() for line in HEADER.splitlines() if line.strip() and not line.startswith("#")
)
_COLD_START, _, _COLD_END = all_cold_body("\0").partition("\0")


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
    entity: str | None = None  # its entity's name
    day: date | None = None  # a fact's date, a note's day
    cites: tuple[str, ...] = ()  # the fact ids a summary line cites
    agent: str | None = None  # whose it is: a skill file's agent, a timeline line's; else shared


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


def _fact_entries(
    absolute: Path, path: str, text: str, *, ref: str | None, names: str, name: str | None
) -> list[Entry]:
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
            entity=name,
            day=fact.timestamp,
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
    name: str | None = None,
    template: frozenset[str] = frozenset(),
    agent: str | None = None,
) -> list[Entry]:
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or _is_template(kind, stripped, template):
            continue
        cites = (
            tuple(
                dict.fromkeys(
                    cited
                    for match in CITATION.finditer(stripped)
                    for cited in CITED_ID.findall(match.group(1))
                )
            )
            if kind == "summary"
            else ()
        )
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
                entity=name,
                day=last_used if kind == "note" else None,
                cites=cites,
                agent=line_agent(stripped) if kind == "note" else agent,
            )
        )
    return entries


def line_agent(line: str) -> str | None:
    """The agent a note line is from (a timeline line); None for the other lines (pending facts,
    what a person wrote), which every agent may read."""
    match = _TIMELINE_AGENT.match(line)
    return match.group(1).strip() if match else None


def _is_template(kind: str, line: str, template: frozenset[str]) -> bool:
    if line in template:
        return True
    return kind == "summary" and line.startswith(_COLD_START) and line.endswith(_COLD_END)


def parse_file(
    path: str,
    text: str,
    refs: dict[str, tuple[str, str, str]],
    tacit_file: str,
    root: Path,
    *,
    skills_dir: str = "agents",
) -> list[Entry]:
    """The entries of one store file (module docstring). `refs`: an entity file's path -> its
    entity's ref, names (space-separated) and name."""
    ref, names, name = refs.get(path, (None, "", None))
    if path.endswith(f"/{ITEMS_FILE}") and path.startswith(f"{LIFE}/"):
        return _fact_entries(root / path, path, text, ref=ref, names=names, name=name)
    if path.endswith(f"/{SUMMARY_FILE}") and path.startswith(f"{LIFE}/"):
        return _line_entries("summary", path, text, ref, about=names, name=name)
    if path.startswith(f"{NOTES_DIR}/"):
        match = NOTE_NAME.match(path.removeprefix(f"{NOTES_DIR}/"))
        day = date.fromisoformat(match.group(1)) if match else None
        return _line_entries("note", path, text, None, last_used=day, template=TEMPLATE_LINES)
    if path == tacit_file:
        return _line_entries("tacit", path, text, None, template=_TACIT_TEMPLATE)
    # agents/<name>/...: the agent whose skills these are (any other file there is shared).
    folders = path.removeprefix(f"{skills_dir}/").split("/")
    agent = folders[0] if len(folders) >= 2 else None
    return _line_entries("skill", path, text, agent, agent=agent)


def indexable(paths: Iterable[str], tacit_file: str, skills_dir: str) -> dict[str, str | None]:
    """Those of `paths` a full scan (`SearchIndex` refresh) would look at, by their names alone
    (entity files below `life/`, daily notes, skills files, the tacit file; no hidden name
    below the folder scanned), each with that folder (None for the tacit file)."""
    found: dict[str, str | None] = {}
    for path in sorted(set(paths)):
        name = path.rpartition("/")[2]
        if path == tacit_file:
            found[path] = None
        elif path.startswith(f"{LIFE}/") and name in (ITEMS_FILE, SUMMARY_FILE):
            found[path] = LIFE
        elif path.startswith(f"{NOTES_DIR}/") and path.count("/") == NOTES_DIR.count("/") + 1:
            if NOTE_NAME.match(name):
                found[path] = NOTES_DIR
        elif path.startswith(f"{skills_dir}/") and name.endswith(".md") and name != "README.md":
            found[path] = skills_dir
    return {
        path: base
        for path, base in found.items()
        if base is None
        or not any(not part or part.startswith(".") for part in path[len(base) + 1 :].split("/"))
    }


def stamp_of(root: str, path: str, base: str | None) -> tuple[int, int, int] | None:
    """A file's (mtime_ns, size, inode) as the full scan finds it below `base`: a regular file
    reached without a symbolic link on the way (the tacit file: whatever it is), else None."""
    try:
        if base is None:
            found = os.lstat(os.path.join(root, path))
            return (found.st_mtime_ns, found.st_size, found.st_ino)
        below = path[len(base) + 1 :].split("/")
        for end in range(1, len(below)):
            folder = os.path.join(root, base, *below[:end])
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return None
        found = os.lstat(os.path.join(root, path))
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    return (found.st_mtime_ns, found.st_size, found.st_ino)
