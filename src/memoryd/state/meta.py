"""A small key/value table for odds and ends that need no table of their own.

Examples: the last heartbeat's summary for `status`, the day `budget.exhausted` was last logged
(so it is logged once a day). Values are text; `get_json`/`set_json` store canonical JSON.
Keys are dotted names chosen by the caller; this module reserves none.
"""

from __future__ import annotations

import json
from typing import Any

from memoryd.state._codec import canonical_json
from memoryd.state.db import StateDB


class Meta:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def get(self, key: str) -> str | None:
        value = self._db.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def delete(self, key: str) -> None:
        self._db.execute("DELETE FROM meta WHERE key = ?", (key,))

    def get_json(self, key: str) -> Any:
        """Return the JSON value stored under `key`, or None when there is none."""
        text = self.get(key)
        return None if text is None else json.loads(text)

    def set_json(self, key: str, value: Any) -> None:
        self.set(key, canonical_json(value))
