"""The readers' cursors: per (agent, source key, file path), an opaque JSON text.

The readers own the cursor format (`FileCursor.to_json()`); this module only keeps the text.
Cursors advance only after the heartbeat's commit (docs/heartbeat.md, step 7), and a source's
cursors
are replaced as a set: `replace_source` writes the given cursors and deletes the source's other
cursors (files that are gone or forgotten) in one transaction, so a crash never leaves a source
half advanced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from memoryd.state.db import StateDB


@dataclass(frozen=True)
class CursorRecord:
    agent: str
    source_key: str
    file_path: str
    cursor_json: str


class Cursors:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def for_source(self, agent: str, source_key: str) -> dict[str, str]:
        """Return the source's cursors as {file path: cursor JSON}, in file path order."""
        rows = self._db.query(
            "SELECT file_path, cursor_json FROM cursors"
            " WHERE agent = ? AND source_key = ? ORDER BY file_path",
            (agent, source_key),
        )
        return {row["file_path"]: row["cursor_json"] for row in rows}

    def all(self) -> list[CursorRecord]:
        """Every cursor, ordered by agent, source key and file path (for `status`)."""
        rows = self._db.query(
            "SELECT agent, source_key, file_path, cursor_json FROM cursors"
            " ORDER BY agent, source_key, file_path"
        )
        return [CursorRecord(**dict(row)) for row in rows]

    def replace_source(self, agent: str, source_key: str, cursors: Mapping[str, str]) -> None:
        """Make `cursors` the source's complete set: upsert them, delete every other one."""
        with self._db.transaction():
            self._db.execute(
                "DELETE FROM cursors WHERE agent = ? AND source_key = ?", (agent, source_key)
            )
            self._upsert(agent, source_key, cursors)

    def replace_all(self, sources: Mapping[tuple[str, str], Mapping[str, str]]) -> None:
        """Make `sources` ((agent, source key) -> path -> cursor JSON) every cursor there is."""
        with self._db.transaction():
            self._db.execute("DELETE FROM cursors")
            for (agent, source_key), cursors in sorted(sources.items()):
                self._upsert(agent, source_key, cursors)

    def update(
        self,
        agent: str,
        source_key: str,
        changed: Mapping[str, str],
        forgotten: Iterable[str] = (),
    ) -> None:
        """Upsert the `changed` cursors and delete the `forgotten` files' ones, atomically;
        leave the source's other cursors as they are."""
        with self._db.transaction():
            self._db.execute_many(
                "DELETE FROM cursors WHERE agent = ? AND source_key = ? AND file_path = ?",
                [(agent, source_key, path) for path in sorted(set(forgotten))],
            )
            self._upsert(agent, source_key, changed)

    def _upsert(self, agent: str, source_key: str, cursors: Mapping[str, str]) -> None:
        self._db.execute_many(
            "INSERT INTO cursors (agent, source_key, file_path, cursor_json) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (agent, source_key, file_path)"
            " DO UPDATE SET cursor_json = excluded.cursor_json",
            [(agent, source_key, path, cursors[path]) for path in sorted(cursors)],
        )
