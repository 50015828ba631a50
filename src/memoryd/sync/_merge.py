"""Merge by meaning: the three-way merge of memoryd's files that never leaves a text conflict.

When the remote has moved and this host has unpushed commits, `memoryd.sync._remote` takes the
remote's tree ("theirs") and re-applies this host's changes since the common ancestor ("base" to
"ours") on top of it, file by file, by what each file means:

- `items.json`: facts by id. A fact only this host added is added (unless the remote holds the same
  statement, which is then the one kept: the same fact is never stored twice); a fact both sides
  changed is merged field by field (`memoryd.sync._merge_facts`: each field from the side that
  changed it, a retraction composed with a supersession, access counts added up); a field both
  changed differently (a person's correction of the text) keeps the remote's value, and the
  contradiction is reported. Two different facts under one id (ids given before ids were unique
  across hosts) are kept both: this host's is renumbered.
- `.memoryd/hosts/<host>.json`: one host's record, written by that host only: the later
  generation wins.
- `.memoryd/provenance/`, `.memoryd/review/`, `.memoryd/reads/`: sources joined, a decision
  over `held`, counted reads joined (`memoryd.sync._merge_records`).
- `life/index.md`: derived; the remote's is taken and the caller regenerates it.
- `summary.md`: rewritten whole by the weekly rewrite; the remote's is kept when both changed.
- `entity.json`: key by key; lists (aliases) are joined.
- daily notes: the bullets this host added to the Timeline and Pending facts sections are added
  to the remote's note as a heartbeat adds them (`memoryd.sync._merge_notes`);
- other Markdown (`MEMORY.md`, skills, a note with hand edits): line by line. Lines either side
  added are kept; a region both changed keeps the remote's lines plus the lines this host added
  there (a line this host removed that the remote kept stays: the person's version wins).
- anything else both changed (a person's files): the remote's version, reported.

An entity folder moved on one side (archived, or active again) and changed on the other is merged
at its new place: files are matched by the entity's slug, unique store-wide.

Everything here is a pure function of bytes: no git, no disk.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from memoryd.errors import CorruptFileError
from memoryd.store.entities import ARCHIVES, ITEMS_FILE, LIFE, METADATA_FILE, SUMMARY_FILE
from memoryd.store.hosts import HOSTS_DIR
from memoryd.store.items import (
    Fact,
    host_code_of,
    next_fact_id,
    parse_items,
    render_items,
    split_fact_id,
)
from memoryd.store.text import normalize_statement
from memoryd.sync._merge_facts import merge_fact
from memoryd.sync._merge_notes import merge_note, note_day
from memoryd.sync._merge_records import is_record, merge_record

INDEX_FILE = f"{LIFE}/index.md"
FORMAT_FILE = ".memoryd-format"


@dataclass
class FileMerge:
    """The merged content of one file (None: deleted) and what was given up to get it."""

    data: bytes | None
    contradictions: list[str] = field(default_factory=list)


def merge_file(
    store_path: str | None, base: bytes | None, ours: bytes | None, theirs: bytes | None
) -> FileMerge:
    """Merge one file; `store_path` is its store-relative path (None: outside the store)."""
    if ours in (theirs, base):
        return FileMerge(theirs)
    if theirs == base:
        return FileMerge(ours)
    problem = None
    if store_path is None:
        problem = "both changed a file outside the store: the remote's kept"
    elif ours is None:
        problem = "removed here but changed on the remote: the remote's kept"
    elif theirs is None:
        return FileMerge(None, ["removed on the remote but changed here: left removed"])
    if problem is not None or store_path is None or ours is None or theirs is None:
        return FileMerge(theirs, [problem or "the remote's kept"])
    try:
        return _merge_by_kind(store_path, base, ours, theirs)
    except (UnicodeDecodeError, ValueError, CorruptFileError) as error:
        return FileMerge(theirs, [f"cannot merge ({error}): the remote's kept"])


def _merge_by_kind(store_path: str, base: bytes | None, ours: bytes, theirs: bytes) -> FileMerge:
    name = PurePosixPath(store_path).name
    in_life = store_path.startswith(f"{LIFE}/")
    merged: FileMerge
    if name == ITEMS_FILE and in_life:
        merged = _merge_items(store_path, base, ours, theirs)
    elif store_path.startswith(f"{HOSTS_DIR}/"):
        merged = FileMerge(_later_record(ours, theirs))
    elif is_record(store_path):
        record = merge_record(store_path, ours, theirs)
        merged = FileMerge(record.data, record.contradictions)
    elif store_path == INDEX_FILE:
        merged = FileMerge(theirs)  # derived: regenerated after the merge
    elif store_path == FORMAT_FILE:
        merged = FileMerge(max(ours, theirs, key=_format_number))
    elif name == SUMMARY_FILE:
        merged = FileMerge(theirs, ["summary changed on both sides: the remote's kept"])
    elif name == METADATA_FILE and in_life:
        merged = _merge_metadata(base, ours, theirs)
    elif (day := note_day(store_path)) is not None and (
        note := merge_note(day, (base or b"").decode(), ours.decode(), theirs.decode())
    ) is not None:
        merged = FileMerge(note.encode())
    elif name.endswith(".md"):
        merged = _merge_text(base, ours, theirs)
    else:
        merged = FileMerge(theirs, ["both changed it: the remote's kept"])
    return merged


# -- entity folders move ------------------------------------------------------------------------


def entity_folders(paths: Iterable[str]) -> dict[str, str]:
    """Slug -> entity folder (store-relative), for the entity folders among `paths`."""
    folders: dict[str, str] = {}
    for path in paths:
        pure = PurePosixPath(path)
        if pure.parts[:1] == (LIFE,) and pure.name in (ITEMS_FILE, SUMMARY_FILE, METADATA_FILE):
            folder = pure.parent
            if len(folder.parts) >= 3:
                folders.setdefault(folder.name, folder.as_posix())
    return folders


def relocations(
    base: Mapping[str, str], ours: Mapping[str, str], theirs: Mapping[str, str]
) -> dict[str, str]:
    """Slug -> the folder where the merged entity lives: where the remote moved it, else where
    this host moved it, else where it was."""
    target: dict[str, str] = {}
    for slug in set(base) | set(ours) | set(theirs):
        before = base.get(slug)
        if slug in theirs and theirs[slug] != before:
            target[slug] = theirs[slug]
        elif slug in ours and ours[slug] != before:
            target[slug] = ours[slug]
        elif before is not None:
            target[slug] = before
    return target


def relocate(path: str, folders: Mapping[str, str], target: Mapping[str, str]) -> str:
    """`path` moved into its entity's target folder (unchanged when it is in no entity folder)."""
    pure = PurePosixPath(path)
    if pure.parts[:1] != (LIFE,) or len(pure.parts) < 4:
        return path
    for depth in range(len(pure.parts) - 1, 2, -1):
        folder = PurePosixPath(*pure.parts[:depth])
        slug = folder.name
        if folders.get(slug) == folder.as_posix() and slug in target:
            rest = PurePosixPath(*pure.parts[depth:])
            return f"{target[slug]}/{rest.as_posix()}"
    return path


def is_archived(folder: str) -> bool:
    return PurePosixPath(folder).parts[1:2] == (ARCHIVES,)


# -- items.json ---------------------------------------------------------------------------------


def _merge_items(path: str, base: bytes | None, ours: bytes, theirs: bytes) -> FileMerge:
    where = Path(path)
    base_facts = {f.id: f for f in parse_items(where, base.decode())} if base else {}
    our_facts = {f.id: f for f in parse_items(where, ours.decode())}
    their_facts = {f.id: f for f in parse_items(where, theirs.decode())}
    contradictions: list[str] = []
    renamed = _renames(base_facts, our_facts, their_facts, contradictions)
    result = dict(their_facts)
    for our_id, original in our_facts.items():
        fact = _renamed_fact(original, renamed)
        before, remote = base_facts.get(our_id), their_facts.get(fact.id)
        if our_id not in base_facts and our_id in renamed and renamed[our_id] in their_facts:
            continue  # the remote already stores the same statement: its fact stands
        if fact == before:
            continue  # this host did not change it: the remote's version (or removal) stands
        if remote is None:
            if before is not None:
                contradictions.append(f"{our_id} removed on the remote: left removed")
                continue
            result[fact.id] = fact
            continue
        result[fact.id] = merge_fact(before, fact, remote, contradictions)
    return FileMerge(render_items(result.values()).encode(), contradictions)


def _statements(facts: Mapping[str, Fact]) -> dict[str, str]:
    return {normalize_statement(f.fact): f.id for f in facts.values()}


def _renames(
    base: Mapping[str, Fact],
    ours: Mapping[str, Fact],
    theirs: Mapping[str, Fact],
    contradictions: list[str],
) -> dict[str, str]:
    """Our id -> the id it has after the merge, for facts this host added: the remote's twin (the
    same statement), or a new number when the remote used the id for another fact."""
    statements = _statements(theirs)
    taken = set(theirs) | set(ours)
    renamed: dict[str, str] = {}
    for fact_id in sorted(set(ours) - set(base), key=_id_order):
        twin = statements.get(normalize_statement(ours[fact_id].fact))
        if twin is not None:
            if twin != fact_id:
                renamed[fact_id] = twin
            continue
        if fact_id in theirs:
            new_id = _free_id(fact_id, taken)
            taken.add(new_id)
            renamed[fact_id] = new_id
            contradictions.append(f"{fact_id} was given on both sides: this host's is now {new_id}")
    return renamed


def _free_id(fact_id: str, taken: set[str]) -> str:
    """A new id for this host's fact whose id the remote gave to another: the next one in the
    same numbering (this host's range for a shared store's id, else the short numbers)."""
    parts = split_fact_id(fact_id)
    slug = parts[0] if parts else fact_id
    return next_fact_id(slug, taken, host_code_of(fact_id))


def _id_order(fact_id: str) -> tuple[int, str]:
    parts = split_fact_id(fact_id)
    return (parts[1], fact_id) if parts else (0, fact_id)


def _renamed_fact(fact: Fact, renamed: Mapping[str, str]) -> Fact:
    new_id = renamed.get(fact.id, fact.id)
    superseded_by = renamed.get(fact.superseded_by or "", fact.superseded_by)
    if new_id == fact.id and superseded_by == fact.superseded_by:
        return fact
    return replace(fact, id=new_id, superseded_by=superseded_by)


# -- other files --------------------------------------------------------------------------------


def _later_record(ours: bytes, theirs: bytes) -> bytes:
    def generation(data: bytes) -> int:
        try:
            value = json.loads(data).get("generation", 0)
        except (ValueError, AttributeError):
            return -1
        return value if isinstance(value, int) else -1

    return ours if generation(ours) >= generation(theirs) else theirs


def _format_number(data: bytes) -> int:
    digits = "".join(ch for ch in data.decode(errors="replace") if ch.isdigit())
    return int(digits) if digits else 0


def _merge_metadata(base: bytes | None, ours: bytes, theirs: bytes) -> FileMerge:
    before = json.loads(base) if base else {}
    mine, remote = json.loads(ours), json.loads(theirs)
    if not all(isinstance(doc, dict) for doc in (before, mine, remote)):
        raise ValueError("entity.json is not an object")
    contradictions: list[str] = []
    merged = dict(remote)
    for key in set(mine) | set(remote):
        was, value, other = before.get(key), mine.get(key), remote.get(key)
        if value in (was, other):
            continue
        if other == was:
            merged[key] = value
        elif isinstance(value, list) and isinstance(other, list):
            merged[key] = other + [item for item in value if item not in other]
        else:
            contradictions.append(f"entity.json: {key} changed on both sides: the remote's kept")
    text = json.dumps(merged, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return FileMerge(text.encode(), contradictions)


def _merge_text(base: bytes | None, ours: bytes, theirs: bytes) -> FileMerge:
    merged, lost = merge_lines(
        (base or b"").decode().splitlines(keepends=True),
        ours.decode().splitlines(keepends=True),
        theirs.decode().splitlines(keepends=True),
    )
    notes = [f"{lost} line(s) changed on both sides: the remote's kept"] if lost else []
    return FileMerge("".join(merged).encode(), notes)


@dataclass(frozen=True)
class _Hunk:
    start: int  # base range [start, end) replaced by `lines`
    end: int
    lines: tuple[str, ...]
    side: str


def _hunks(base: list[str], other: list[str], side: str) -> list[_Hunk]:
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        _Hunk(i1, i2, tuple(other[j1:j2]), side)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _region(base: list[str], hunks: list[_Hunk], start: int, end: int) -> list[str]:
    lines: list[str] = []
    position = start
    for hunk in sorted(hunks, key=lambda h: (h.start, h.end)):
        lines += base[position : hunk.start] + list(hunk.lines)
        position = hunk.end
    return lines + base[position:end]


def merge_lines(base: list[str], ours: list[str], theirs: list[str]) -> tuple[list[str], int]:
    """Three-way line merge that keeps every line either side added; see the module docstring.
    Return the lines and how many lines of this host's changes gave way to the remote's."""
    hunks = sorted(
        _hunks(base, ours, "ours") + _hunks(base, theirs, "theirs"), key=lambda h: (h.start, h.end)
    )
    merged: list[str] = []
    position = 0
    lost = 0
    index = 0
    while index < len(hunks):
        group = [hunks[index]]
        start, end = group[0].start, group[0].end
        index += 1
        while index < len(hunks) and (hunks[index].start < end or hunks[index].start == start):
            group.append(hunks[index])
            end = max(end, hunks[index].end)
            index += 1
        merged += base[position:start]
        mine = [h for h in group if h.side == "ours"]
        remote = [h for h in group if h.side == "theirs"]
        if not remote:
            merged += _region(base, mine, start, end)
        elif not mine:
            merged += _region(base, remote, start, end)
        else:
            their_lines = _region(base, remote, start, end)
            my_lines = _region(base, mine, start, end)
            kept = set(their_lines) | set(base[start:end])
            added = [line for line in my_lines if line not in kept]
            merged += their_lines + added
            lost += sum(
                1 for line in base[start:end] if line not in my_lines and line in their_lines
            )
        position = end
    return merged + base[position:], lost
