"""How the mention index is stored (schema version 5): packed texts, a contentless index with
no positions, kept in step by hand, and the migration from the plain-text rows before it."""

from __future__ import annotations

import re
import sqlite3
from datetime import date, timedelta
from pathlib import Path

import pytest

from memoryd.state import ConversationDay, State, StateDB, StateError
from memoryd.state.schema import MIGRATIONS

DAY1 = date(2026, 3, 1)
PACKING = next(m.version for m in MIGRATIONS if m.description == "pack the mention index")
WORDS = [
    *("plan", "review", "numbers", "budget", "deploy", "staging", "customer", "invoice"),
    *("meeting", "notes", "agreed", "tomorrow", "release", "branch", "merge", "tests"),
    *("failing", "fixed", "schema", "migration", "index"),
]


def _check_index(state_path: Path) -> None:
    """FTS5's own consistency check of the index (raises if the index is damaged)."""
    with StateDB.open(state_path) as db:
        db.execute(
            "INSERT INTO conversation_days_fts (conversation_days_fts) VALUES ('integrity-check')"
        )


def _dialogue(seed: int, words: int) -> str:
    # Varied enough not to pack to nothing, the same on every run.
    return " ".join(WORDS[(seed * 31 + n * n * 7 + n // 3) % len(WORDS)] for n in range(words))


def test_texts_are_stored_packed_and_the_index_keeps_no_copy(state_path: Path) -> None:
    text = "We agreed with Initech on the plan. " * 200
    with State.open(state_path) as state:
        state.mentions.append("cos", "s1", DAY1, text)
        assert state.mentions.count_mentions(["Initech"]) == 1
        probe = state.db.scalar(
            "SELECT sql FROM sqlite_temp_schema WHERE name = 'memoryd_name_probe'"
        )
    tokenizer = re.search(r"tokenize='[^']*'", probe)
    assert tokenizer is not None
    with StateDB.open(state_path) as db:
        packed = db.scalar("SELECT length(packed) FROM conversation_days")
        assert packed < len(text) / 20
        names = {row[0] for row in db.query("SELECT name FROM sqlite_schema")}
        # contentless (no _content table), and no per-row sizes (no _docsize table)
        assert "conversation_days_fts_content" not in names
        assert "conversation_days_fts_docsize" not in names
        assert not any(name.startswith("conversation_days_after_") for name in names)
        schema = db.scalar("SELECT sql FROM sqlite_schema WHERE name = 'conversation_days_fts'")
        assert tokenizer.group() in schema  # names are tokenized by the index's rules


def test_appends_and_forgetting_keep_the_index_consistent(state_path: Path) -> None:
    with State.open(state_path) as state:
        for number in range(30):
            day = DAY1 + timedelta(days=number % 3)
            state.mentions.append("cos", f"s{number % 4}", day, _dialogue(number, 40))
        state.mentions.append("cos", "s0", DAY1, "Globex called")
        _check_index(state_path)
        assert state.mentions.forget_before(DAY1 + timedelta(days=1)) == 4
        _check_index(state_path)
        assert state.mentions.count_mentions(["Globex"]) == 0
        # The forgotten day read again is a new row, found again.
        state.mentions.append("cos", "s0", DAY1, "Globex called")
        assert state.mentions.mention_days(["globex"]) == [ConversationDay("cos", "s0", DAY1)]
    _check_index(state_path)


def test_a_multi_word_name_needs_its_words_together_although_the_index_has_no_positions(
    state: State,
) -> None:
    state.mentions.append("cos", "s1", DAY1, "Jane met the team. Later, Doe wrote.")
    state.mentions.append("cos", "s2", DAY1, "Then jane\tdoe signed")
    assert state.mentions.mention_days(["Jane Doe"]) == [ConversationDay("cos", "s2", DAY1)]


def test_a_name_the_tokenizer_cannot_split_is_found_by_reading_every_day(state: State) -> None:
    # U+19B0 (New Tai Lue) is a letter to Python but no token character to SQLite 3.40's
    # tables: the index cannot be asked for it, so every day is read instead.
    name = "\u19b0\u19b1"
    state.mentions.append("cos", "s1", DAY1, f"met {name} today")
    state.mentions.append("cos", "s2", DAY1, f"x{name}")
    state.mentions.append("cos", "s3", DAY1, "nothing")
    assert state.mentions.mention_days([name, "Acme"]) == [ConversationDay("cos", "s1", DAY1)]


def test_counting_inside_a_rolled_back_transaction_leaves_counting_working(
    state: State, state_path: Path
) -> None:
    state.mentions.append("cos", "s1", DAY1, "Acme")
    with StateDB.open(state_path) as db:
        mentions = type(state.mentions)(db)
        with pytest.raises(RuntimeError), db.transaction():
            assert mentions.count_mentions(["Acme"]) == 1  # creates the probe, rolled back
            raise RuntimeError
        assert mentions.count_mentions(["Acme"]) == 1


def test_a_damaged_packed_text_is_a_clear_state_error(state: State, state_path: Path) -> None:
    state.mentions.append("cos", "s1", DAY1, "Acme")
    connection = sqlite3.connect(state_path, isolation_level=None)
    connection.execute("UPDATE conversation_days SET packed = x'00010203'")
    connection.close()
    with pytest.raises(StateError, match="row 1 of the mention index is damaged"):
        state.mentions.text_of("cos", "s1", DAY1)


def _old_database(state_path: Path, days: int) -> dict[tuple[str, str, str], str]:
    """A database as the schema before packing made it, with plain-text rows."""
    texts = {
        ("cos", f"s{number % 7}", (DAY1 + timedelta(days=number)).isoformat()): (
            _dialogue(number, 900) + (" Initech" if number % 5 == 0 else "")
        )
        for number in range(days)
    }
    texts[("cos", "s9", DAY1.isoformat())] = "Jane met the team\n\nJane Doe later"
    with StateDB.open(state_path, migrations=MIGRATIONS[: PACKING - 1]) as db:
        assert db.scalar("PRAGMA auto_vacuum") == 2
        db.execute_many(
            "INSERT INTO conversation_days (agent, session_id, day, text) VALUES (?, ?, ?, ?)",
            [(*key, text) for key, text in texts.items()],
        )
    return texts


def test_the_migration_packs_an_older_database_in_place_and_gives_the_space_back(
    state_path: Path,
) -> None:
    texts = _old_database(state_path, 120)
    with StateDB.open(state_path, migrations=MIGRATIONS[: PACKING - 1]) as db:
        db.reclaim_space()
    plain_size = state_path.stat().st_size
    assert plain_size > 600_000

    with State.open(state_path) as state:
        assert state.db.schema_version >= PACKING
        for (agent, session, day), text in texts.items():
            assert state.mentions.text_of(agent, session, date.fromisoformat(day)) == text
        assert state.mentions.count_mentions(["Initech"]) == 24
        assert state.mentions.count_mentions(["Jane Doe"]) == 1
        # Appending after the migration dedupes against the migrated text, and grows it.
        assert not state.mentions.append("cos", "s9", DAY1, "Jane Doe later")
        assert state.mentions.append("cos", "s9", DAY1, "Initech too")
        assert state.mentions.count_mentions(["Initech"]) == 25
    _check_index(state_path)
    # The old table's and index's pages went back to the file system with the migration.
    assert state_path.stat().st_size < plain_size / 2
    with StateDB.open(state_path) as db:
        assert db.scalar("PRAGMA freelist_count") == 0
        columns = {row["name"] for row in db.query("PRAGMA table_info(conversation_days)")}
        assert "packed" in columns and "text" not in columns
        assert db.scalar("SELECT COUNT(*) FROM conversation_days WHERE settled = 0") == len(texts)
        assert db.scalar("SELECT count(*) FROM sqlite_schema WHERE name LIKE '%_plain'") == 0


def test_past_days_are_packed_tighter_once_a_share_at_a_time(state: State) -> None:
    texts = {n: _dialogue(n, 3000) for n in range(4)}
    for number, text in texts.items():
        state.mentions.append("cos", "s1", DAY1 + timedelta(days=number), text)
    fast = state.db.scalar("SELECT SUM(length(packed)) FROM conversation_days")
    # Days before the third only; each call packs about its budget, at least one day.
    assert state.mentions.settle(DAY1 + timedelta(days=2), budget=1) == 1
    assert state.mentions.settle(DAY1 + timedelta(days=2), budget=10**9) == 1
    assert state.mentions.settle(DAY1 + timedelta(days=2)) == 0
    settled = [row[0] for row in state.db.query("SELECT settled FROM conversation_days")]
    assert settled == [1, 1, 0, 0]
    assert state.db.scalar("SELECT SUM(length(packed)) FROM conversation_days") < fast
    for number, text in texts.items():
        assert state.mentions.text_of("cos", "s1", DAY1 + timedelta(days=number)) == text
    # A settled day that grows is packed fast again, and settled again later.
    assert state.mentions.append("cos", "s1", DAY1, "Globex joined late")
    assert state.db.scalar("SELECT settled FROM conversation_days WHERE day = '2026-03-01'") == 0
    assert state.mentions.settle(DAY1 + timedelta(days=2)) == 1
    assert state.mentions.count_mentions(["Globex"]) == 1


def _index_bytes(state: State) -> int:
    return int(state.db.scalar("SELECT SUM(length(block)) FROM conversation_days_fts_data"))


def test_settling_merges_the_segments_appends_leave_behind(state_path: Path) -> None:
    # Each append indexes the day's whole text again (and a 'delete' of the old one) in new
    # segments; settling merges them, so the index shrinks while every answer stays the same.
    names = [["Initech"], ["Globex"], ["plan"], ["budget notes"], ["Umbrella"]]
    with State.open(state_path) as state:
        for block in range(12):
            for number in range(6):
                day = DAY1 + timedelta(days=number)
                extra = " Initech" if number == block % 6 else ""
                state.mentions.append("cos", f"s{number}", day, _dialogue(block, 200) + extra)
        state.mentions.append("cos", "s9", DAY1, "Globex called about the budget notes")
        counts = [state.mentions.mention_days(name) for name in names]
        before = _index_bytes(state)
        state.mentions.settle(DAY1)  # nothing to pack: only the merge
        after = _index_bytes(state)
        assert after < before * 0.8
        assert [state.mentions.mention_days(name) for name in names] == counts
        assert len(counts[0]) == 6 and len(counts[1]) == 1
    _check_index(state_path)
