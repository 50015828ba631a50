"""Pairing the cursors of a source with the files it names now, following files that moved:
the same device and inode under a new name (rotation), or the same lineage (a Paperclip run log
replaced by its gzipped copy), so that reading goes on where it stopped instead of starting over.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from memoryd.sources.cursor import FileCursor, FileIdentity
from memoryd.sources.formats import Format, LineFormat
from memoryd.sources.results import ReadStats

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _same_file(cursor: FileCursor, status: os.stat_result) -> bool:
    return (cursor.identity.device, cursor.identity.inode) == (status.st_dev, status.st_ino)


def match_cursors(
    fmt: Format,
    statuses: Mapping[str, os.stat_result],
    cursors: Mapping[str, FileCursor],
    stats: ReadStats,
) -> dict[str, FileCursor]:
    """Pair each current file with the cursor that describes it, following moved files.

    A cursor whose path is gone, or now holds another inode, is an orphan. A file without a
    cursor of its own (new, or its path's inode changed) first takes an orphan with its
    inode (rotation) or lineage (gzipped run log). A path whose old cursor nobody took keeps
    it: its file was replaced in place, and reading it again de-duplicates against it.
    """
    matched: dict[str, FileCursor] = {}
    orphans: dict[str, FileCursor] = {}
    for key, cursor in cursors.items():
        status = statuses.get(key)
        if status is not None and _same_file(cursor, status):
            matched[key] = cursor
        else:
            orphans[key] = cursor
    for key, status in statuses.items():
        if key in matched or not orphans:
            continue
        adopted = _adopt(fmt, key, status, orphans)
        if adopted is not None:
            matched[key] = adopted
            stats.files_moved += 1
    for key in statuses:
        if key not in matched and key in orphans:
            matched[key] = orphans.pop(key)
    stats.files_forgotten = len(orphans)
    return matched


def _adopt(
    fmt: Format, path: str, status: os.stat_result, orphans: dict[str, FileCursor]
) -> FileCursor | None:
    """Continue a cursor whose file moved to `path` (rotation or a Paperclip gzip)."""
    for key, orphan in orphans.items():
        if _same_file(orphan, status):
            del orphans[key]
            return replace(orphan, path=path)
    lineage = fmt.lineage(Path(path)) if isinstance(fmt, LineFormat) else None
    if lineage is None:
        return None
    for key, orphan in orphans.items():
        if isinstance(fmt, LineFormat) and fmt.lineage(Path(key)) == lineage:
            del orphans[key]
            # Same content under a new file: keep the position, take the new identity.
            identity = FileIdentity(status.st_dev, status.st_ino, _EMPTY_SHA256, 0)
            return replace(orphan, path=path, identity=identity, size=-1, at_eof=False)
    return None
