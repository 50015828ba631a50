"""Find the unread end of a rotated transcript under a name the source does not read.

Log rotation moves a file away between two reads, and the lines written since the last read go
with it: renamed (`s.jsonl` -> `s.jsonl.1`, same inode) or copied then truncated in place
(logrotate's `copytruncate`: a new inode holding the old head). When the new name is one the
format rejects, the walk never finds it, so the reader asks here where its cursor's file went
and reads that copy to its end once. Only an uncompressed sibling in the same folder whose name
extends the old one (`.1`, `-20260301`, `_old`) is considered, and only a regular file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from memoryd.sources._open import open_regular
from memoryd.sources.cursor import FileCursor

_SEPARATORS = frozenset(".-_")
_COMPRESSED = (".gz", ".zst", ".bz2", ".xz", ".zip")


@dataclass(frozen=True)
class Rotated:
    """A cursor's file found under a name the walk does not read, and the cursor to read it."""

    key: str  # the path the cursor was stored under
    path: str  # where the file (or its copy) is now
    status: os.stat_result
    cursor: FileCursor  # the stored cursor, pointed at `path`
    renamed: bool  # the very file, renamed (else a copy taken before a truncation)


def rotated_away(
    cursors: Mapping[str, FileCursor],
    statuses: Mapping[str, os.stat_result],
    compressed: Callable[[str], bool],
) -> list[Rotated]:
    """The files of `cursors` rotated away with lines not read yet, in path order.

    `statuses` are the files the walk found. Untouched files are passed over first, cheaply: a
    read with nothing new pays one comparison per file here.
    """
    candidates = []
    for key, cursor in cursors.items():
        status = statuses.get(key)
        if (
            status is not None
            and status.st_size == cursor.size
            and status.st_mtime_ns == cursor.mtime_ns
            and status.st_ino == cursor.identity.inode
        ):
            continue
        if needs_rescue(cursor, status):
            candidates.append((key, cursor))
    if not candidates:
        return []
    where = {(status.st_dev, status.st_ino): key for key, status in statuses.items()}
    found: list[Rotated] = []
    for key, cursor in sorted(candidates):
        moved_to = where.get((cursor.identity.device, cursor.identity.inode), key)
        if moved_to != key or compressed(key):
            continue  # moved to a name the walk finds (adopted as usual), or compressed
        copy = rotated_copy(cursor, statuses)
        if copy is None:
            continue
        path, status = copy
        same = (status.st_dev, status.st_ino) == (cursor.identity.device, cursor.identity.inode)
        identity = replace(cursor.identity, device=status.st_dev, inode=status.st_ino)
        pointed = replace(cursor, path=path, identity=identity)
        found.append(Rotated(key, path, status, pointed, renamed=same))
    return found


def needs_rescue(cursor: FileCursor, status: os.stat_result | None) -> bool:
    """Whether the cursor's unread end may have moved away: its file is gone, replaced or cut."""
    if cursor.position <= 0:
        return False
    if status is None:
        return True
    same = (status.st_dev, status.st_ino) == (cursor.identity.device, cursor.identity.inode)
    if not same or status.st_size < cursor.position:
        return True
    if status.st_size == cursor.size and status.st_mtime_ns == cursor.mtime_ns:
        return False
    # Grown past the cursor again since a truncation (copytruncate, then new lines): the head
    # tells. One short read, only for a file that changed.
    return not _same_head(cursor.path, cursor)


def rotated_copy(
    cursor: FileCursor, discovered: Collection[str]
) -> tuple[str, os.stat_result] | None:
    """Where the cursor's file went, as (path, status), or None.

    The cursor's own path counts when it still holds the cursor's inode but is no longer one the
    walk finds (a rotated copy being drained over several reads).
    """
    folder, name = os.path.split(cursor.path)
    try:
        entries = sorted(os.scandir(folder or "."), key=lambda entry: entry.name)
    except OSError:
        return None
    copies: list[tuple[str, os.stat_result]] = []
    for entry in entries:
        own = entry.path == cursor.path
        if entry.path in discovered or not (own or _extends(entry.name, name)):
            continue
        try:
            status = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(status.st_mode):
            continue
        if (status.st_dev, status.st_ino) == (cursor.identity.device, cursor.identity.inode):
            return entry.path, status  # renamed: the very file
        if not own and status.st_size >= cursor.position:
            copies.append((entry.path, status))
    for path, status in copies:
        if _same_head(path, cursor):
            return path, status  # copied before a truncation
    return None


def _extends(candidate: str, name: str) -> bool:
    return (
        len(candidate) > len(name)
        and candidate.startswith(name)
        and candidate[len(name)] in _SEPARATORS
        and not candidate.endswith(_COMPRESSED)
    )


def _same_head(path: str, cursor: FileCursor) -> bool:
    try:
        with open_regular(Path(path)) as raw:
            head = raw.read(cursor.identity.head_length)
    except OSError:
        return False
    return (
        cursor.identity.head_length > 0
        and len(head) == cursor.identity.head_length
        and hashlib.sha256(head).hexdigest() == cursor.identity.head_sha256
    )
