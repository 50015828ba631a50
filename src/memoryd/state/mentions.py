"""The full-text index of conversation-days, and mention counting for the entity heuristics.

DESIGN §1.2: a name counts one mention per conversation and day in whose cleaned user or
assistant text it occurs as whole words, case-insensitively, across everything memoryd has read,
even after the transcript is gone. So this module keeps one row per (agent, session, day) with
that day's cleaned text, appended to as more of the conversation-day is read, and an FTS5 index
over it.

Counting is two steps, because the FTS tokenizer and "whole words" do not agree exactly (it
folds diacritics and drops punctuation: "C++" is the token "c"): the index is asked for the rows
containing any of the names as a phrase, a superset of the answer, and a whole-word regular
expression then decides on each candidate's text. A whole word here means: not preceded or
followed by a word character (letters, digits, underscore), so "Al" does not match "Alice" but
"Acme" matches "acme," and "ACME"; the words of a multi-word name may be separated by any run of
white space. Names are passed to FTS5 as quoted strings, so quotes and FTS syntax inside a name
are data. A name without any letter or digit cannot be found through the index and counts no
mention.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from memoryd.state._codec import day_from_text, day_to_text
from memoryd.state.db import StateDB

# Appended blocks are separated by a blank line, so two blocks never join into one word.
BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True, order=True)
class ConversationDay:
    agent: str
    session_id: str
    day: date


def _fts_phrase(name: str) -> str:
    # FTS5 reads a query as a C string: a NUL would end it early (NUL is no token character, so
    # a space finds the same candidates). Inside double quotes everything is phrase text, with
    # a quote written twice.
    return '"' + name.replace("\x00", " ").replace('"', '""') + '"'


def _word_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    alternatives = []
    for name in sorted(set(names)):
        words = name.split()
        if words:
            alternatives.append(r"\s+".join(re.escape(word) for word in words))
    if not alternatives:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def _usable_names(names: Iterable[str]) -> list[str]:
    """Names that the index can find: with at least one letter or digit."""
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
            # A block counts as known only where it stands between block boundaries: then every
            # whole word in it is a whole word of the text already, and no mention is lost.
            row = self._db.query_one(
                "SELECT id, instr(?1 || text || ?1, ?1 || ?2 || ?1) > 0 AS known"
                " FROM conversation_days WHERE agent = ?3 AND session_id = ?4 AND day = ?5",
                (BLOCK_SEPARATOR, text, *key),
            )
            if row is None:
                self._db.execute(
                    "INSERT INTO conversation_days (agent, session_id, day, text)"
                    " VALUES (?, ?, ?, ?)",
                    (*key, text),
                )
                return True
            if row["known"]:
                return False
            self._db.execute(
                "UPDATE conversation_days SET text = text || ? || ? WHERE id = ?",
                (BLOCK_SEPARATOR, text, row["id"]),
            )
            return True

    def text_of(self, agent: str, session_id: str, day: date) -> str | None:
        value = self._db.scalar(
            "SELECT text FROM conversation_days WHERE agent = ? AND session_id = ? AND day = ?",
            (agent, session_id, day_to_text(day)),
        )
        return None if value is None else str(value)

    def mention_days(self, names: Sequence[str]) -> list[ConversationDay]:
        """Return the conversation-days in which any of `names` occurs as whole words, sorted."""
        usable = _usable_names(names)
        pattern = _word_pattern(usable)
        if pattern is None:
            return []
        query = " OR ".join(_fts_phrase(name) for name in usable)
        rows = self._db.query(
            "SELECT d.agent, d.session_id, d.day, d.text"
            " FROM conversation_days_fts JOIN conversation_days AS d"
            "   ON d.id = conversation_days_fts.rowid"
            " WHERE conversation_days_fts MATCH ?",
            (query,),
        )
        found = [
            ConversationDay(row["agent"], row["session_id"], day_from_text(row["day"]))
            for row in rows
            if pattern.search(row["text"])
        ]
        return sorted(found)

    def count_mentions(self, names: Sequence[str]) -> int:
        """Return how many conversation-days mention any of `names` (a name and its aliases)."""
        return len(self.mention_days(names))

    def forget_before(self, day: date) -> int:
        """Delete conversation-days older than `day`; return how many. (Never needed by the
        heuristics; offered for operators who bound the database's size.)"""
        cursor = self._db.execute(
            "DELETE FROM conversation_days WHERE day < ?", (day_to_text(day),)
        )
        return cursor.rowcount
