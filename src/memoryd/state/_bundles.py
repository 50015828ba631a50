"""Bundles: past conversation-days of one agent packed together (schema version 7).

Each conversation-day's text is packed on its own (`state/_packing.py`), and on its own a day
of dialogue packs to a quarter or so of its size: every day spells out again the words its
agent uses every day. Packed together, about a megabyte of an agent's consecutive past days at
a time, the same text takes some 15-20% less. So `bundle` moves past days (before the day
`MentionIndex.settle` is given) into bundles once an agent has at least `BUNDLE_TEXT` bytes of
them, instead of packing each tighter on its own (they count as settled then): the
bundle holds the days' UTF-8 texts one after the other, packed once at `BUNDLE_LEVEL`, and
each day's row keeps only where its text lies in the bundle (`bundle`, `bundle_start`,
`bundle_end`; its own `packed` is then empty). An agent with less than that (a small
installation) has no bundle while it keeps talking; once it has been quiet for `QUIET_DAYS`
(no day of its since then: a finished import, an agent no longer used, a backfill of old
transcripts), what is left of its days, two or more, is bundled too, since no more text is
expected for them.

A bundled day is read by unpacking its bundle (`Texts` keeps the last one unpacked, so reading
a bundle's days in order unpacks it once). A bundled day that grows (more of a past day read
late) leaves its bundle: its whole text is packed on its own again. A bundle no day refers to
any more is deleted (`drop_unused`), so forgetting days gives the space back.
"""

from __future__ import annotations

import sqlite3

from memoryd.state._packing import UnpackError, pack_text, unpack_text
from memoryd.state.db import StateDB
from memoryd.state.errors import StateError

# Bytes of text a bundle is made of (at least; whole days). Packing one takes about half a
# second at BUNDLE_LEVEL; a bigger one packs a little tighter and costs more to read a day from.
BUNDLE_TEXT = 1_000_000
BUNDLE_LEVEL = 19
# Days without a conversation-day of an agent after which its last days are bundled too.
QUIET_DAYS = 7
# The columns `Texts.text` reads.
ROW_COLUMNS = "id, packed, bundle, bundle_start, bundle_end"


class Texts:
    """Reads conversation-days' texts, bundled or not, keeping the last bundle unpacked."""

    def __init__(self, db: StateDB) -> None:
        self._db = db
        self._bundle: tuple[int, bytes] | None = None

    def text(self, row: sqlite3.Row) -> str:
        if row["bundle"] is None:
            try:
                return unpack_text(row["packed"])
            except UnpackError as error:
                raise self._damaged(f"conversation-day row {row['id']}", error) from error
        data = self._bundle_bytes(int(row["bundle"]))
        try:
            return data[row["bundle_start"] : row["bundle_end"]].decode("utf-8")
        except UnicodeDecodeError as error:
            raise self._damaged(f"conversation-day row {row['id']}", error) from error

    def _bundle_bytes(self, bundle: int) -> bytes:
        if self._bundle is None or self._bundle[0] != bundle:
            packed = self._db.scalar(
                "SELECT packed FROM conversation_day_bundles WHERE id = ?", (bundle,)
            )
            if packed is None:
                raise self._damaged(f"bundle {bundle}", LookupError("it is missing"))
            try:
                data = unpack_text(packed).encode("utf-8")
            except UnpackError as error:
                raise self._damaged(f"bundle {bundle}", error) from error
            self._bundle = (bundle, data)
        return self._bundle[1]

    def _damaged(self, what: str, error: Exception) -> StateError:
        return StateError(f"{self._db.path}: {what} of the mention index is damaged ({error})")


def bundle(db: StateDB, before: str, quiet_since: str, budget: int) -> int:
    """Bundle days before the day `before` (text), about `budget` bytes of text at most (at
    least one bundle if any is due); an agent with no day since `quiet_since` gets its last
    days bundled too. Return how many days were bundled. Call inside a transaction."""
    made = 0
    spent = 0
    agents = db.query(
        "SELECT DISTINCT agent FROM conversation_days"
        " WHERE bundle IS NULL AND day < ? ORDER BY agent",
        (before,),
    )
    texts = Texts(db)
    for (agent,) in agents:
        rows = db.query(
            f"SELECT {ROW_COLUMNS} FROM conversation_days"  # noqa: S608 - a constant
            " WHERE agent = ? AND bundle IS NULL AND day < ?"
            " ORDER BY day, id",
            (agent, before),
        )
        group: list[tuple[int, bytes]] = []
        size = 0
        for row in rows:
            if made and spent >= budget:
                return made
            data = texts.text(row).encode("utf-8")
            group.append((int(row["id"]), data))
            size += len(data)
            if size >= BUNDLE_TEXT:
                _make(db, group)
                made += len(group)
                spent += size
                group, size = [], 0
        if len(group) > 1 and _quiet(db, agent, quiet_since):
            _make(db, group)
            made += len(group)
            spent += size
    return made


def _quiet(db: StateDB, agent: str, since: str) -> bool:
    newest = db.scalar("SELECT MAX(day) FROM conversation_days WHERE agent = ?", (agent,))
    return newest is not None and str(newest) < since


def _make(db: StateDB, group: list[tuple[int, bytes]]) -> None:
    whole = b"".join(data for _, data in group)
    cursor = db.execute(
        "INSERT INTO conversation_day_bundles (packed) VALUES (?)",
        (pack_text(whole.decode("utf-8"), level=BUNDLE_LEVEL),),
    )
    start = 0
    updates = []
    for rowid, data in group:
        updates.append((cursor.lastrowid, start, start + len(data), rowid))
        start += len(data)
    db.execute_many(
        "UPDATE conversation_days SET packed = x'', settled = 1, bundle = ?,"
        " bundle_start = ?, bundle_end = ? WHERE id = ?",
        updates,
    )


def drop_unused(db: StateDB) -> None:
    """Delete the bundles no conversation-day refers to any more."""
    db.execute(
        "DELETE FROM conversation_day_bundles WHERE id NOT IN"
        " (SELECT bundle FROM conversation_days WHERE bundle IS NOT NULL)"
    )
