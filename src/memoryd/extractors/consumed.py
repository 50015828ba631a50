"""What a heartbeat consumed, as it is committed: the cursors, the ranges filed ahead of a
held-back cursor, and this host's record in the store (`memoryd.store.hosts`).

A file whose chunk failed (or was deferred by a stop) keeps the cursor it had: everything after
it is read again next time. The chunks of that file applied before the failure are committed all
the same, so their line ranges are recorded as filed "ahead" of the cursor, and reading the file
again skips them (`memoryd.extractors.intake`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from dataclasses import replace
from typing import Any

from memoryd.extractors.intake import Intake, Source
from memoryd.store.hosts import (
    HostRecord,
    PendingEntry,
    merge_ranges,
    read_host_record,
    write_host_record,
)
from memoryd.worktree import FileTransaction


def cursors_to_commit(
    sources: Sequence[Source], read: Intake, held_files: Set[str]
) -> list[dict[str, Any]]:
    """Per source, the cursors to commit: the new ones, except that a held file keeps its old
    cursor (or none, when it never had one: it is read from the start next time)."""
    result: list[dict[str, Any]] = []
    for source in sources:
        key = source.key
        new = read.new.get(key, {})
        old = read.old.get(key, {})
        merged = dict(new)
        for path in held_files:
            if read.sources_by_file.get(path) != key:
                continue
            if path in old:
                merged[path] = old[path]
            else:
                merged.pop(path, None)
        result.append({"agent": source.agent, "key": key, "cursors": merged})
    return result


def ahead_to_commit(
    read: Intake, done: Iterable[str], held_files: Set[str]
) -> dict[str, list[list[int]]]:
    """Per file whose cursor stays held back, the line ranges filed beyond it: those of earlier
    heartbeats, and the turns of this heartbeat's applied chunks (`done`). A file whose cursor
    advanced needs none: everything before the new cursor is consumed."""
    advanced = {path for cursors in read.new.values() for path in cursors if path not in held_files}
    applied_keys = set(done)
    applied = [chunk for chunk in read.chunks if chunk.key in applied_keys]
    ahead: dict[str, list[list[int]]] = {}
    for path in sorted((set(read.ahead) - advanced) | held_files):
        ranges = list(read.ahead.get(path, ()))
        if path in held_files:
            ranges += [
                turn.provenance.lines
                for chunk in applied
                for turn in chunk.turns
                if turn.provenance.file == path and turn.provenance.lines[0] > 0
            ]
        if merged := merge_ranges(ranges):
            ahead[path] = [list(line_range) for line_range in merged]
    return ahead


def record_progress(
    tx: FileTransaction,
    *,
    host: str,
    mirrored: int,
    cursors: list[dict[str, Any]],
    seen: list[str],
    pending: Iterable[PendingEntry],
    ahead: dict[str, list[list[int]]],
) -> int:
    """Stage this host's record as it stands after the heartbeat, so that the commit that files
    memories also records what they came from; return its generation, raised only when the
    record changes (`mirrored` is the generation the state database mirrors)."""
    old = read_host_record(tx, host) or HostRecord(host)
    sources = dict(old.sources)  # a source no longer configured keeps its cursors
    for source in cursors:
        sources[(source["agent"], source["key"])] = dict(source["cursors"])
    record = HostRecord(
        host=host,
        generation=old.generation,
        sources={source: files for source, files in sources.items() if files},
        seen=old.seen | set(seen),
        pending=tuple(pending),
        ahead={path: tuple((a, b) for a, b in ranges) for path, ranges in ahead.items()},
    )
    if record.same_content(old):
        return old.generation  # nothing new (no record yet, and nothing to record)
    record = replace(record, generation=max(old.generation, mirrored) + 1)
    write_host_record(tx, record)
    return record.generation
