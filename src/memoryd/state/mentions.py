"""The full-text index of conversation-days, and mention counting for the entity heuristics.

docs/store-format.md, Creating entities: a name counts one mention per conversation and day in whose
cleaned user or
assistant text it occurs as whole words, case-insensitively, across everything memoryd has read,
even after the transcript is gone. So this module keeps one row per (agent, session, day) with
that day's cleaned text, appended to as more of the conversation-day is read, and an FTS5 index
over it.

Storage (schema version 5), sized to stay a small fraction of the transcripts read: each row's
text is kept zstd-compressed (`packed`, `state/_packing.py`), and the FTS5 table is contentless
with `detail=none`: it records only which rows hold which token, no positions and no copy of the
text. With no content table behind the index, this module keeps it in step itself: a new row's
text is inserted; an append unpacks the day's text, adds the block, packs it again, and tells
FTS5 to 'delete' the old text (contentless tables need the exact old values) before inserting
the new. Appends pack fast (zstd level 3); once a day is past, the heartbeat packs its text again
tighter (level 15: about 15% smaller, at some 5 MB/s), a share per heartbeat (`settle`).

Counting is two steps, because the FTS tokenizer and "whole words" do not agree exactly (it
folds diacritics and drops punctuation: "C++" is the token "c"): the index is asked for the rows
holding every token of any of the names, a superset of the answer, and a whole-word regular
expression then decides on each candidate's unpacked text. A name's tokens are the ones SQLite's
own tokenizer gives it (the names are tokenized through a temporary FTS5 table with the same
tokenizer), so the index and the query never disagree on where a token ends; each token is
passed quoted, so quotes and FTS syntax inside a name are data. `detail=none` has no phrase
queries, so a multi-word name asks for rows with all of its words anywhere (more candidates, the
same answer). A name the tokenizer finds no token in although it has a letter or digit (one
SQLite's Unicode tables do not know) is decided by scanning every row, never by dropping it.

A whole word here means: not preceded or followed by a word character (letters, digits,
underscore), nor joined to a path, URL, e-mail address or identifier (`_BEFORE`, `_AFTER`), so
"Al" does not match "Alice" nor "Dev" `/dev/sda1`, but "Acme" matches "acme," and "ACME"; the
words of a multi-word name may be separated by any run of white space. A name without any
letter or digit counts no mention.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

import memoryd.state._bundles as bundles
from memoryd.state._bundles import ROW_COLUMNS, Texts
from memoryd.state._codec import day_from_text, day_to_text
from memoryd.state._packing import TIGHT, pack_text
from memoryd.state.db import StateDB

# Appended blocks are separated by a blank line, so two blocks never join into one word.
BLOCK_SEPARATOR = "\n\n"
# Characters of text `settle` packs tighter per call: about a second of CPU (bundled, at zstd
# 19, some three seconds; only while a backfill's or an upgrade's past days are caught up: an
# agent fills a bundle every few weeks).
SETTLE_BUDGET = 4_000_000
# Pages of index FTS5 may write per `settle` call to merge its segments.
MERGE_PAGES = 256
# After days were bundled, a database up to this size is rewritten without slack (`settle`).
COMPACT_LIMIT = 256_000_000


@dataclass(frozen=True, order=True)
class ConversationDay:
    agent: str
    session_id: str
    day: date


def _fts_term(token: str) -> str:
    # Inside double quotes everything is token text, with a quote written twice.
    return '"' + token.replace('"', '""') + '"'


# What may not touch a name for it to count: a word character before or after it, nor a path,
# URL, e-mail or identifier joined to it ("/dev/sda1", "dev-server", "dev.example.com",
# "dev@example.com"). Sentence punctuation after it ("Dev.", "Dev's", "Dev-") still counts.
_BEFORE = r"(?<![\w/\\@.\-:~$])"
_AFTER = r"(?![\w/\\@]|[-.:'][^\W_](?<!'s))"


def _word_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    alternatives = []
    for name in sorted(set(names)):
        words = name.split()
        if words:
            alternatives.append(r"\s+".join(re.escape(word) for word in words))
    if not alternatives:
        return None
    return re.compile(_BEFORE + "(?:" + "|".join(alternatives) + ")" + _AFTER, re.IGNORECASE)


def _usable_names(names: Iterable[str]) -> list[str]:
    """Names that can be found: with at least one letter or digit."""
    return sorted({name for name in names if any(char.isalnum() for char in name)})


class MentionIndex:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def append(self, agent: str, session_id: str, day: date, text: str) -> bool:
        """Add cleaned `text` to the conversation-day's indexed text.

        A block the day's text already holds between block boundaries is not added again, so
        re-reading the same records after a crash does not grow the index. Return whether the
        text changed.
        """
        if not text.strip():
            return False
        key = (agent, session_id, day_to_text(day))
        with self._db.transaction():
            row = self._db.query_one(
                f"SELECT {ROW_COLUMNS} FROM conversation_days"  # noqa: S608 - a constant
                " WHERE agent = ? AND session_id = ? AND day = ?",
                key,
            )
            if row is None:
                cursor = self._db.execute(
                    "INSERT INTO conversation_days (agent, session_id, day, packed)"
                    " VALUES (?, ?, ?, ?)",
                    (*key, pack_text(text)),
                )
                self._index(cursor.lastrowid, text)
                return True
            old = Texts(self._db).text(row)
            # A block counts as known only where it stands between block boundaries: then every
            # whole word in it is a whole word of the text already, and no mention is lost.
            sep = BLOCK_SEPARATOR
            if f"{sep}{text}{sep}" in f"{sep}{old}{sep}":
                return False
            new = old + sep + text
            # A bundled day leaves its bundle (`state/_bundles.py`).
            self._db.execute(
                "UPDATE conversation_days SET packed = ?, settled = 0, bundle = NULL,"
                " bundle_start = NULL, bundle_end = NULL WHERE id = ?",
                (pack_text(new), row["id"]),
            )
            if row["bundle"] is not None:
                bundles.drop_unused(self._db)
            self._unindex(row["id"], old)
            self._index(row["id"], new)
            return True

    def text_of(self, agent: str, session_id: str, day: date) -> str | None:
        row = self._db.query_one(
            f"SELECT {ROW_COLUMNS} FROM conversation_days"  # noqa: S608 - a constant
            " WHERE agent = ? AND session_id = ? AND day = ?",
            (agent, session_id, day_to_text(day)),
        )
        return None if row is None else Texts(self._db).text(row)

    def mention_days(self, names: Sequence[str]) -> list[ConversationDay]:
        """Return the conversation-days in which any of `names` occurs as whole words, sorted."""
        usable = _usable_names(names)
        pattern = _word_pattern(usable)
        if pattern is None:
            return []
        tokens = self._tokens(usable)
        if all(tokens):
            query = " OR ".join(
                "(" + " AND ".join(_fts_term(token) for token in sorted(name_tokens)) + ")"
                for name_tokens in tokens
            )
            # In bundle order, so that each bundle is unpacked once.
            rows = self._db.query(
                f"SELECT {ROW_COLUMNS}, agent, session_id, day"  # noqa: S608 - a constant
                " FROM conversation_days WHERE id IN"
                " (SELECT rowid FROM conversation_days_fts WHERE conversation_days_fts MATCH ?)"
                " ORDER BY bundle, id",
                (query,),
            )
        else:
            # A name the index cannot be asked for: read every day.
            rows = self._db.query(
                f"SELECT {ROW_COLUMNS}, agent, session_id, day"  # noqa: S608 - a constant
                " FROM conversation_days ORDER BY bundle, id"
            )
        texts = Texts(self._db)
        found = [
            ConversationDay(row["agent"], row["session_id"], day_from_text(row["day"]))
            for row in rows
            if pattern.search(texts.text(row))
        ]
        return sorted(found)

    def count_mentions(self, names: Sequence[str]) -> int:
        """Return how many conversation-days mention any of `names` (a name and its aliases)."""
        return len(self.mention_days(names))

    def forget_before(self, day: date) -> int:
        """Delete conversation-days older than `day`; return how many. (Never needed by the
        heuristics; offered for operators who bound the database's size.)"""
        with self._db.transaction():
            rows = self._db.query(
                f"SELECT {ROW_COLUMNS} FROM conversation_days"  # noqa: S608 - a constant
                " WHERE day < ? ORDER BY bundle, id",
                (day_to_text(day),),
            )
            texts = Texts(self._db)
            for row in rows:
                self._unindex(row["id"], texts.text(row))
                self._db.execute("DELETE FROM conversation_days WHERE id = ?", (row["id"],))
            bundles.drop_unused(self._db)
        return len(rows)

    def settle(self, before: date, budget: int = SETTLE_BUDGET) -> int:
        """Pack the texts of conversation-days before `before` tighter, once; return how many.

        An agent's past days are bundled first, a megabyte of text or more at a time
        (`state/_bundles.py`: some 15-20% smaller than each day packed alone); those left
        over, an agent's last days short of a bundle, are each packed tighter on their own.

        A text is packed fast while its day may still grow; a past day's is packed again at a
        higher level, which takes longer, so each call does about `budget` characters of text
        (at least one day), oldest days first, and the next call goes on. Unchanged text, so the
        index is untouched; the space freed goes back with `StateDB.reclaim_space`.

        The index's pending segment merges are done here too, up to `MERGE_PAGES` pages a call
        (the caller calls this only in heartbeats that read something). Each append writes the
        day's whole text again into a new segment, with a 'delete' of the old text; FTS5's own
        merging, paced by inserts, lags behind, and after a backfill the index held close to
        twice what it needs. Segments of any level are merged (FTS5's 'merge' with a negative
        page count, an incremental 'optimize' that goes on where the last call stopped), so
        the index tends to one segment without a day's text twice, while a call's work stays
        bounded whatever the size of the index.

        A day's row held part of its packed text, so rows were few to a page; bundled, they
        are small, and their pages mostly empty. So after a call that bundled days (rare: a
        megabyte of an agent's text at a time), a database up to `COMPACT_LIMIT` is rewritten
        without that slack (`StateDB.compact`); a bigger one keeps it.
        """
        with self._db.transaction():
            # An agent's past days bundled first (`state/_bundles.py`); the rest packed tighter.
            quiet_since = day_to_text(before - timedelta(days=bundles.QUIET_DAYS))
            done = bundled = bundles.bundle(self._db, day_to_text(before), quiet_since, budget)
            spent = bundles.BUNDLE_TEXT if done else 0
            waiting = self._db.query(
                "SELECT id FROM conversation_days WHERE settled = 0 AND day < ?"
                " ORDER BY day, id LIMIT 1000",
                (day_to_text(before),),
            )
            texts = Texts(self._db)
            for (rowid,) in waiting:
                if done and spent >= budget:
                    break
                row = self._db.query_one(
                    f"SELECT {ROW_COLUMNS} FROM conversation_days WHERE id = ?",  # noqa: S608
                    (rowid,),
                )
                assert row is not None  # noqa: S101 - listed just above, in this transaction
                text = texts.text(row)
                self._db.execute(
                    "UPDATE conversation_days SET packed = ?, settled = 1 WHERE id = ?",
                    (pack_text(text, level=TIGHT), rowid),
                )
                done += 1
                spent += len(text)
            self._db.execute(
                "INSERT INTO conversation_days_fts (conversation_days_fts, rank)"
                " VALUES ('merge', ?)",
                (-MERGE_PAGES,),
            )
        if bundled:
            self._db.compact(COMPACT_LIMIT)
        return done

    def _index(self, rowid: int | None, text: str) -> None:
        self._db.execute(
            "INSERT INTO conversation_days_fts (rowid, text) VALUES (?, ?)", (rowid, text)
        )

    def _unindex(self, rowid: int, text: str) -> None:
        # A contentless index forgets a row only when given exactly the text it indexed.
        self._db.execute(
            "INSERT INTO conversation_days_fts (conversation_days_fts, rowid, text)"
            " VALUES ('delete', ?, ?)",
            (rowid, text),
        )

    def _tokens(self, names: Sequence[str]) -> list[set[str]]:
        """Each name's tokens as the index's tokenizer splits and folds them."""
        # The tokenizer of `conversation_days_fts` (schema version 5). Created again if a
        # rolled-back transaction took it away.
        self._db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memoryd_name_probe"
            " USING fts5(name, detail=none, tokenize='unicode61 remove_diacritics 2')"
        )
        self._db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memoryd_name_probe_terms"
            " USING fts5vocab(temp, memoryd_name_probe, instance)"
        )
        self._db.execute("DELETE FROM temp.memoryd_name_probe")
        # FTS5 reads text as a C string: a NUL would end it early (NUL is no token character,
        # so a space gives the same tokens).
        self._db.execute_many(
            "INSERT INTO temp.memoryd_name_probe (rowid, name) VALUES (?, ?)",
            [(number, name.replace("\x00", " ")) for number, name in enumerate(names)],
        )
        tokens: list[set[str]] = [set() for _ in names]
        for row in self._db.query("SELECT doc, term FROM temp.memoryd_name_probe_terms"):
            tokens[row["doc"]].add(row["term"])
        self._db.execute("DELETE FROM temp.memoryd_name_probe")
        return tokens
