"""Each host's record in the store: what its heartbeats consumed and what they hold back.

The store is memoryd's source of truth (docs/store-format.md, The store is the truth); the state
database is a cache of it. What a
correct next heartbeat needs beyond the memories themselves is written here, in the same commit
as the memories it produced, one file per host: `.memoryd/hosts/<host>.json`. It holds

- `sources`: per configured source (agent and source key), the reader's cursor of every file,
  i.e. how far each transcript has been consumed;
- `seen`: the source keys read at least once (a source seen for the first time is read from the
  backfill window, not from its beginning);
- `pending`: the facts about entities that have not qualified yet (docs/store-format.md, Creating
entities);
- `ahead`: per transcript file whose cursor was held back (a chunk of it failed, or the heartbeat
  stopped), the line ranges already filed beyond that cursor, so that reading the file again
  from its cursor never files them twice, whatever the journal in the state database says and
  however the day boundaries (`schedule.timezone`) cut the turns into chunks;
- `generation`: a counter raised by each commit that changes the record, so that the state
  database can tell cheaply whether it mirrors this record, is behind it, or ahead of it (a store
  restored from an older backup).

Rendering is deterministic (sorted keys, one cursor per line), so an unchanged record is
byte-identical and two generations differ only in the lines that changed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from memoryd.errors import CorruptFileError
from memoryd.worktree import FileTransaction, slugify

HOSTS_DIR = ".memoryd/hosts"
RECORD_FORMAT = 1

SourceId = tuple[str, str]  # (agent, source key)
LineRange = tuple[int, int]  # inclusive, 1-based


@dataclass(frozen=True, order=True)
class PendingEntry:
    """A fact kept until its entity qualifies, as the heartbeat staged it."""

    kind: str
    key: str  # the normalized name it was reported under
    conversation_date: date
    entity_name: str
    fact: Mapping[str, Any] = field(compare=False)
    source: Mapping[str, Any] = field(compare=False)

    def sort_key(self) -> tuple[str, str, str, str, str]:
        return (
            self.kind,
            self.key,
            self.conversation_date.isoformat(),
            str(self.fact.get("fact", "")),
            json.dumps(self.source, sort_keys=True),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation_date": self.conversation_date.isoformat(),
            "entity_name": self.entity_name,
            "fact": dict(self.fact),
            "key": self.key,
            "kind": self.kind,
            "source": dict(self.source),
        }


@dataclass(frozen=True)
class HostRecord:
    """One host's record (see the module docstring); cursors are the readers' JSON texts."""

    host: str
    generation: int = 0
    sources: Mapping[SourceId, Mapping[str, str]] = field(default_factory=dict)
    seen: frozenset[str] = frozenset()
    pending: tuple[PendingEntry, ...] = ()
    ahead: Mapping[str, tuple[LineRange, ...]] = field(default_factory=dict)

    def same_content(self, other: HostRecord) -> bool:
        """Whether the two records say the same, whatever their generations."""
        return render_host_record(replace(self, generation=0)) == render_host_record(
            replace(other, generation=0)
        )


def host_slug(host: str) -> str:
    """The file name stem of a host's record: its name as a slug memoryd computes."""
    return slugify(host) or "host"


def record_path(host: str) -> str:
    """Store-relative path of the host's record."""
    return f"{HOSTS_DIR}/{host_slug(host)}.json"


def read_host_record(tx: FileTransaction, host: str) -> HostRecord | None:
    """The host's record as the transaction sees it, or None when the store has none. Raise
    CorruptFileError for a file that is not a record memoryd wrote."""
    path = record_path(host)
    text = tx.read_text(path)
    if text is None:
        return None
    return parse_host_record(text, path)


def read_host_generation(tx: FileTransaction, host: str) -> int | None:
    """The generation of the host's record, or None when the store has none, without parsing
    the record when its text is canonical (`record_generation`): a job compares it with the
    state database's before every run, and the record holds a cursor per transcript file. A
    text in any other form is parsed whole, raising CorruptFileError as `read_host_record`."""
    path = record_path(host)
    text = tx.read_text(path)
    if text is None:
        return None
    generation = record_generation(text)
    return generation if generation is not None else parse_host_record(text, path).generation


def record_generation(text: str) -> int | None:
    """The generation a record in canonical form (`render_host_record`) states on its own line
    at the top level, or None when the text is not in that form (then only a full parse can
    tell). One such line, the format's line, and a whole document: a record cut short or with
    the key twice is left to the full parse. Found by substring search (the line is near the
    top; a top-level line is the only one indented by two spaces: strings hold no newline)."""
    if not (text.startswith("{\n") and text.endswith("\n}\n")):
        return None
    if f'\n  "format": {RECORD_FORMAT},\n' not in text:
        return None
    start = text.find(_GENERATION_KEY)
    if start < 0 or text.find(_GENERATION_KEY, start + 1) >= 0:
        return None
    found = _GENERATION_VALUE.match(text, start + len(_GENERATION_KEY))
    return int(found[1]) if found is not None else None


_GENERATION_KEY = '\n  "generation": '
_GENERATION_VALUE = re.compile(r"(0|[1-9][0-9]*),\n")


def write_host_record(tx: FileTransaction, record: HostRecord) -> None:
    tx.write_text(record_path(record.host), render_host_record(record))


_CURSOR_MARK = re.compile(r'"\\u0000cursor:(\d+)\\u0000"')


def render_host_record(record: HostRecord) -> str:
    """Canonical text: sorted keys, two-space indent, each cursor compact on its own line."""
    cursors: list[str] = []

    def mark(text: str) -> str:
        cursors.append(json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False))
        return f"\0cursor:{len(cursors) - 1}\0"

    document = {
        "ahead": {
            path: [list(line_range) for line_range in ranges]
            for path, ranges in sorted(record.ahead.items())
            if ranges
        },
        "format": RECORD_FORMAT,
        "generation": record.generation,
        "host": record.host,
        "pending": [entry.to_json() for entry in sorted(record.pending, key=PendingEntry.sort_key)],
        "seen": sorted(record.seen),
        "sources": [
            {
                "agent": agent,
                "cursors": {path: mark(text) for path, text in sorted(files.items())},
                "key": key,
            }
            for (agent, key), files in sorted(record.sources.items())
        ],
    }
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
    return _CURSOR_MARK.sub(lambda match: cursors[int(match.group(1))], text) + "\n"


def parse_host_record(text: str, path: str) -> HostRecord:
    """Parse a record; raise CorruptFileError naming `path` and what is wrong."""

    def corrupt(problem: str) -> CorruptFileError:
        return CorruptFileError(Path(path), f"{problem} (it is memoryd's record of this host)")

    try:
        document = json.loads(text)
    except ValueError as error:
        raise corrupt(f"not JSON ({error})") from None
    if not isinstance(document, dict):
        raise corrupt("not a JSON object")
    if document.get("format") != RECORD_FORMAT:
        raise corrupt(f"unknown record format {document.get('format')!r}")
    try:
        sources: dict[SourceId, dict[str, str]] = {}
        for item in document["sources"]:
            files = {
                str(path): json.dumps(cursor, sort_keys=True, separators=(",", ":"))
                for path, cursor in item["cursors"].items()
            }
            sources[(str(item["agent"]), str(item["key"]))] = files
        pending = tuple(
            PendingEntry(
                kind=str(entry["kind"]),
                key=str(entry["key"]),
                conversation_date=date.fromisoformat(entry["conversation_date"]),
                entity_name=str(entry["entity_name"]),
                fact=dict(entry["fact"]),
                source=dict(entry["source"]),
            )
            for entry in document["pending"]
        )
        generation = document["generation"]
        if not isinstance(generation, int) or isinstance(generation, bool) or generation < 0:
            raise corrupt("'generation' must be a whole number")
        ahead = {
            str(path): tuple((int(first), int(last)) for first, last in ranges)
            for path, ranges in document.get("ahead", {}).items()
        }
        return HostRecord(
            host=str(document["host"]),
            generation=generation,
            sources=sources,
            seen=frozenset(str(key) for key in document["seen"]),
            pending=pending,
            ahead=ahead,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise corrupt(f"malformed ({type(error).__name__}: {error})") from None


def merge_ranges(ranges: list[LineRange]) -> tuple[LineRange, ...]:
    """The same lines as few ranges as possible: sorted, overlapping or touching ones joined."""
    merged: list[LineRange] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


def covered(ranges: tuple[LineRange, ...], lines: LineRange) -> bool:
    """Whether `lines` lies wholly inside one of `ranges`."""
    return any(first <= lines[0] and lines[1] <= last for first, last in ranges)
