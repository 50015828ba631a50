"""Past conversation-days bundled (schema version 7): packed together once an agent has enough
of them, read back unchanged, taken out again when they grow, and dropped when forgotten."""

from __future__ import annotations

import random
import sqlite3
from datetime import date, timedelta
from pathlib import Path

import pytest

from memoryd.state import ConversationDay, State, StateDB, StateError, _bundles
from memoryd.state._packing import TIGHT, pack_text
from memoryd.state.schema import MIGRATIONS

DAY1 = date(2026, 3, 1)
BUNDLING = next(m.version for m in MIGRATIONS if m.description == "bundle past conversation-days")
WORDS = [
    *("plan", "review", "numbers", "budget", "deploy", "staging", "customer", "invoice"),
    *("meeting", "notes", "agreed", "tomorrow", "release", "branch", "merge", "tests"),
    *("Ünïcode", "naïve", "café", "schema", "migration", "index"),
]
NAMES = [["Initech"], ["Globex"], ["café"], ["budget notes"], ["Umbrella"], ["plan"]]


def _dialogue(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 31 + n * n * 7 + n // 3) % len(WORDS)] for n in range(words))


def _fill(state: State, days: int) -> dict[tuple[str, str, date], str]:
    mentions = state.mentions
    texts: dict[tuple[str, str, date], str] = {}
    for number in range(days):
        for agent in ("cos", "ops"):
            day = DAY1 + timedelta(days=number)
            text = _dialogue(number, 400) + (" Initech" if number % 3 == 0 else "")
            if agent == "ops" and number == 4:
                text += "\nGlobex called about the budget notes"
            mentions.append(agent, f"s{number % 2}", day, text)
            texts[(agent, f"s{number % 2}", day)] = text
    return texts


def _counts(state: State) -> list[list[ConversationDay]]:
    return [state.mentions.mention_days(names) for names in NAMES]


def _bundled(state: State) -> int:
    return int(state.db.scalar("SELECT count(*) FROM conversation_days WHERE bundle IS NOT NULL"))


def _stored(state: State) -> int:
    return int(
        state.db.scalar(
            "SELECT (SELECT TOTAL(length(packed)) FROM conversation_days)"
            " + (SELECT TOTAL(length(packed)) FROM conversation_day_bundles)"
        )
    )


@pytest.fixture(autouse=True)
def _small_bundles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bundles, "BUNDLE_TEXT", 20_000)


def test_settled_days_are_bundled_and_read_back_unchanged(state: State) -> None:
    texts = _fill(state, 24)
    counts = _counts(state)
    assert len(counts[0]) == 16 and len(counts[1]) == 1 and len(counts[2]) == 32
    each_alone = sum(len(pack_text(text, level=TIGHT)) for text in texts.values())
    state.mentions.settle(DAY1 + timedelta(days=30), budget=10**9)
    # Each agent's days, about BUNDLE_TEXT at a time; the rest waits for more.
    per_agent = sum(len(text.encode()) for key, text in texts.items() if key[0] == "cos")
    bundles = state.db.scalar("SELECT count(*) FROM conversation_day_bundles")
    assert bundles == 2 * (per_agent // 20_000)
    assert _bundled(state) > 30
    assert _stored(state) < each_alone * 0.7
    # Every past day is settled: bundled, or (the rest) packed tighter on its own.
    assert state.db.scalar("SELECT count(*) FROM conversation_days WHERE settled = 0") == 0
    assert _counts(state) == counts
    for (agent, session, day), text in texts.items():
        assert state.mentions.text_of(agent, session, day) == text


def test_a_bundled_day_that_grows_leaves_its_bundle(state: State) -> None:
    texts = _fill(state, 24)
    state.mentions.settle(DAY1 + timedelta(days=30), budget=10**9)
    key = ("ops", "s0", DAY1)
    assert state.db.scalar(
        "SELECT bundle FROM conversation_days WHERE agent = ? AND session_id = ? AND day = ?",
        (key[0], key[1], key[2].isoformat()),
    )
    assert state.mentions.append(*key, "Umbrella signed")
    assert state.mentions.text_of(*key) == texts[key] + "\n\nUmbrella signed"
    assert not state.mentions.append(*key, "Umbrella signed")  # already there
    assert state.mentions.mention_days(["Umbrella"]) == [ConversationDay(*key)]
    row = state.db.query_one(
        "SELECT bundle, settled FROM conversation_days WHERE agent = ? AND day = ?",
        (key[0], key[2].isoformat()),
    )
    assert row is not None and tuple(row) == (None, 0)
    # The other days of its bundle still read from it.
    for (agent, session, day), text in texts.items():
        if (agent, session, day) != key:
            assert state.mentions.text_of(agent, session, day) == text


def test_forgetting_days_drops_the_bundles_left_unused(state: State, state_path: Path) -> None:
    _fill(state, 24)
    state.mentions.settle(DAY1 + timedelta(days=30), budget=10**9)
    bundles = state.db.scalar("SELECT count(*) FROM conversation_day_bundles")
    assert state.mentions.forget_before(DAY1 + timedelta(days=12)) == 24
    left = state.db.scalar("SELECT count(*) FROM conversation_day_bundles")
    assert 0 < left < bundles
    assert len(state.mentions.mention_days(["Initech"])) == 8
    assert state.mentions.forget_before(DAY1 + timedelta(days=40)) == 24
    assert state.db.scalar("SELECT count(*) FROM conversation_day_bundles") == 0
    with StateDB.open(state_path) as db:
        db.execute(
            "INSERT INTO conversation_days_fts (conversation_days_fts) VALUES ('integrity-check')"
        )


def test_a_damaged_bundle_is_a_clear_state_error(state: State, state_path: Path) -> None:
    _fill(state, 24)
    state.mentions.settle(DAY1 + timedelta(days=30), budget=10**9)
    connection = sqlite3.connect(state_path, isolation_level=None)
    connection.execute("UPDATE conversation_day_bundles SET packed = x'00010203'")
    connection.close()
    with pytest.raises(StateError, match=r"bundle \d+ of the mention index is damaged"):
        state.mentions.count_mentions(["Initech"])


def test_an_older_database_is_upgraded_and_bundled_with_the_same_counts(
    state_path: Path,
) -> None:
    with State.open(state_path) as state:  # the texts and their counts, today
        texts = _fill(state, 24)
        counts = _counts(state)
    state_path.unlink()
    with StateDB.open(state_path, migrations=MIGRATIONS[: BUNDLING - 1]) as db:
        # Rows as version 6 wrote them: each day's text packed, and indexed.
        for number, ((agent, session, day), text) in enumerate(texts.items(), start=1):
            db.execute(
                "INSERT INTO conversation_days (id, agent, session_id, day, packed)"
                " VALUES (?, ?, ?, ?, ?)",
                (number, agent, session, day.isoformat(), pack_text(text)),
            )
            db.execute(
                "INSERT INTO conversation_days_fts (rowid, text) VALUES (?, ?)", (number, text)
            )
    with State.open(state_path) as state:
        assert state.db.schema_version == len(MIGRATIONS)
        assert _counts(state) == counts
        state.mentions.settle(DAY1 + timedelta(days=30), budget=10**9)
        assert _bundled(state) > 30
        assert _counts(state) == counts
        for (agent, session, day), text in texts.items():
            assert state.mentions.text_of(agent, session, day) == text


def test_an_agent_quiet_for_a_week_gets_its_last_days_bundled_too(state: State) -> None:
    texts = _fill(state, 24)
    counts = _counts(state)
    last = DAY1 + timedelta(days=23)
    # A week after its last day the agent still counts as talking: only whole bundles.
    state.mentions.settle(last + timedelta(days=_bundles.QUIET_DAYS), budget=10**9)
    partly = _bundled(state)
    assert 0 < partly < len(texts)
    state.mentions.settle(last + timedelta(days=_bundles.QUIET_DAYS + 1), budget=10**9)
    assert _bundled(state) == len(texts)
    assert _counts(state) == counts
    for (agent, session, day), text in texts.items():
        assert state.mentions.text_of(agent, session, day) == text


def _pages(state: State) -> int:
    return int(state.db.scalar("PRAGMA page_count"))


def test_bundling_rewrites_a_database_up_to_the_limit_without_slack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.state import mentions

    chooser = random.Random(5)  # noqa: S311 - made-up words, the same on every run
    syllables = ["ka", "lo", "mi", "nu", "re", "sa", "ti", "vo", "an", "el", "ber", "ment"]
    words = ["".join(chooser.choices(syllables, k=chooser.randint(1, 4))) for _ in range(3000)]
    pages = {}
    for limit in (0, 10**9):
        monkeypatch.setattr(mentions, "COMPACT_LIMIT", limit)
        with State.open(tmp_path / f"limit-{limit}" / "state.db") as state:
            for number in range(60):
                text = " ".join(random.Random(number).choices(words, k=1500))  # noqa: S311
                state.mentions.append("cos", "s1", DAY1 + timedelta(days=number), text)
            counts = _counts(state)
            state.mentions.settle(DAY1 + timedelta(days=80), budget=10**9)
            assert _bundled(state) > 50
            state.db.reclaim_space()
            assert state.db.scalar("PRAGMA freelist_count") == 0
            assert state.db.scalar("PRAGMA integrity_check") == "ok"
            assert _counts(state) == counts
            pages[limit] = _pages(state)
    # The rows that held part of each day's packed text are small once bundled.
    assert pages[10**9] <= pages[0] - 20
