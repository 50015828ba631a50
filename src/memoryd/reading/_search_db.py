"""The search index's database file (`search.sqlite`): its tables, its version, and opening
it. The index is a cache, so a file that is not a usable index of this version is deleted and
started afresh rather than migrated.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Final

from memoryd.logs import get_logger

log = get_logger("memoryd.reading.search")  # the index's logger: its events keep the name

# 4: stemmed terms (porter over unicode61), entries carry their entity's name, their date and
# the fact ids a summary line cites. 5: entries carry the agent they belong to (skills, timeline
# lines), and CJK text is indexed as its characters and their pairs as well
# (`memoryd.reading._query.cjk_grams`). A file of another version is rebuilt (`connect`).
SCHEMA_VERSION: Final = "5"
_BUSY_TIMEOUT_MS: Final = 5000

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL,
                                 size INTEGER NOT NULL, inode INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
    rowid INTEGER PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,
    ref TEXT, line INTEGER NOT NULL, status TEXT, last_used TEXT, uses INTEGER NOT NULL,
    text TEXT NOT NULL, terms TEXT NOT NULL, entity TEXT, day TEXT, cites TEXT NOT NULL,
    agent TEXT);
CREATE INDEX IF NOT EXISTS entries_path ON entries(path);
CREATE INDEX IF NOT EXISTS entries_id ON entries(id);
CREATE INDEX IF NOT EXISTS entries_heat ON entries(kind, status, path, last_used, uses);
CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(
    terms, content='entries', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2');
"""


def connect(path: Path | None) -> sqlite3.Connection:
    """The index database, set up; a file that is not a usable index is started afresh. None:
    an index in memory, for a reader with nowhere to keep one. Raise sqlite3.OperationalError
    when the file cannot be opened or written (permissions, a read-only file system)."""
    for attempt in range(2):
        connection = sqlite3.connect(
            ":memory:" if path is None else path,
            timeout=_BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            connection.execute("PRAGMA journal_mode = WAL")
            _check_version(connection)
            connection.executescript(_SCHEMA)
            connection.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('version', ?)", (SCHEMA_VERSION,)
            )
        except sqlite3.OperationalError:
            connection.close()
            raise  # not a damaged index: a file this process cannot use, left alone
        except sqlite3.DatabaseError as error:
            connection.close()
            if attempt or path is None:
                raise
            log.warning("search.index_rebuilt", path=str(path), reason=str(error))
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
            continue
        return connection
    raise AssertionError("unreachable")  # pragma: no cover


def _check_version(connection: sqlite3.Connection) -> None:
    version = _version(connection)
    if version not in (None, SCHEMA_VERSION):
        raise sqlite3.DatabaseError(f"index version {version}")


def _version(connection: sqlite3.Connection) -> str | None:
    exists = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if exists is None:
        return None
    row = connection.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    return None if row is None else str(row[0])
