"""Intake: sources read from their committed cursors, cleaned, indexed for mentions, chunked.

Transcripts are real JSONL files under tmp_path, read by the real `SourceReader`; the state
database is a real SQLite file; cleaning is the production cleaner. Nothing reads the clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from structlog.testing import capture_logs
from tests.support.extractors import START, make_chunk

from memoryd.extractors.chunking import Chunk, chunk_to_json
from memoryd.extractors.intake import (
    Cleaner,
    Intake,
    Source,
    chronological,
    read_sources,
    requeued_chunks,
)
from memoryd.settings import SourceSettings
from memoryd.sources.clean import clean_conversation
from memoryd.sources.cursor import FileCursor
from memoryd.sources.model import Conversation
from memoryd.sources.reader import ReadResult, SourceReader
from memoryd.state import State

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
UTC_ZONE = ZoneInfo("UTC")
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


@pytest.fixture
def state(tmp_path: Path) -> Iterator[State]:
    opened = State.open(tmp_path / "state" / "state.db")
    yield opened
    opened.close()


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs" / "ops"
    folder.mkdir(parents=True)
    return folder


def source_of(folder: Path, agent: str = "ops") -> Source:
    settings = SourceSettings(format="jsonl", path=str(folder))
    return Source(agent, f"jsonl:{folder}", SourceReader(agent, settings))


def said(role: str, text: str, when: datetime) -> dict[str, str]:
    return {"role": role, "content": text, "timestamp": when.isoformat()}


def write_log(path: Path, rows: Sequence[Mapping[str, str]], *, append: bool = False) -> Path:
    with path.open("a" if append else "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def clean(conversation: Conversation) -> Conversation | None:
    """The production cleaner, as `jobs.parts.make_cleaner` builds it."""
    cleaned, _stats = clean_conversation(conversation)
    return cleaned if cleaned.turns else None


def read(
    state: State,
    *sources: Source,
    backfill: timedelta | None = None,
    zone: ZoneInfo = UTC_ZONE,
    index_mentions: bool = True,
    cleaner: Cleaner = clean,
) -> Intake:
    return read_sources(
        sources,
        state,
        clean=cleaner,
        zone=zone,
        chunk_tokens=4000,
        backfill=backfill,
        now=NOW,
        index_mentions=index_mentions,
    )


def commit(state: State, intake: Intake, *sources: Source) -> None:
    """What the heartbeat's finalisation does after its git commit: cursors advance and each
    source read is marked as seen."""
    for source in sources:
        state.cursors.replace_source(source.agent, source.key, intake.new[source.key])
        state.meta.set(f"source.seen:{source.key}", NOW.isoformat())


def texts(chunks: Sequence[Chunk]) -> list[str]:
    return [turn.text for chunk in chunks for turn in chunk.turns]


# --- reading and cursors ----------------------------------------------------------------------


def test_a_new_transcript_becomes_chunks_of_one_conversation_day_each(
    state: State, logs: Path
) -> None:
    path = write_log(
        logs / "s1.jsonl",
        [
            said("user", "Plan the launch", START),
            said("assistant", "Here is a plan", START + timedelta(minutes=1)),
            said("user", "Next morning: go", START + timedelta(days=1)),
        ],
    )
    source = source_of(logs)

    intake = read(state, source)

    assert [(c.agent, c.session_id, c.day.isoformat()) for c in intake.chunks] == [
        ("ops", "s1", "2026-03-02"),
        ("ops", "s1", "2026-03-03"),
    ]
    assert texts(intake.chunks) == ["Plan the launch", "Here is a plan", "Next morning: go"]
    assert intake.old == {source.key: {}}
    assert list(intake.new[source.key]) == [str(path)]
    assert intake.sources_by_file == {str(path): source.key}


def test_reading_advances_no_cursor(state: State, logs: Path) -> None:
    write_log(logs / "s1.jsonl", [said("user", "Plan the launch", START)])
    source = source_of(logs)

    first = read(state, source)
    again = read(state, source)

    assert state.cursors.for_source(source.agent, source.key) == {}
    assert [c.key for c in again.chunks] == [c.key for c in first.chunks]


def test_after_the_commit_only_what_appeared_since_is_read(state: State, logs: Path) -> None:
    path = write_log(logs / "s1.jsonl", [said("user", "Plan the launch", START)])
    source = source_of(logs)
    first = read(state, source)
    commit(state, first, source)

    assert read(state, source).chunks == []

    write_log(path, [said("user", "Launch moved", START + timedelta(hours=1))], append=True)
    later = read(state, source)

    assert texts(later.chunks) == ["Launch moved"]
    assert later.old[source.key] == first.new[source.key]
    assert later.new[source.key] != first.new[source.key]


def test_a_cursor_that_did_not_move_keeps_its_stored_text(state: State, logs: Path) -> None:
    path = write_log(logs / "s1.jsonl", [said("user", "Plan the launch", START)])
    source = source_of(logs)
    commit(state, read(state, source), source)
    # Stored as another writer might have spelt it: same cursor, other JSON layout.
    stored = state.cursors.for_source(source.agent, source.key)[str(path)]
    respelt = json.dumps(json.loads(stored), indent=1)
    state.cursors.replace_source(source.agent, source.key, {str(path): respelt})

    idle = read(state, source)

    assert idle.chunks == []
    assert idle.new == idle.old == {source.key: {str(path): respelt}}  # not encoded again

    write_log(path, [said("user", "Launch moved", START + timedelta(hours=1))], append=True)
    moved = read(state, source).new[source.key][str(path)]
    assert moved == FileCursor.from_json(moved).to_json()
    assert FileCursor.from_json(moved).position > FileCursor.from_json(respelt).position


def test_backfill_skips_older_content_on_a_sources_first_sight(state: State, logs: Path) -> None:
    write_log(
        logs / "s1.jsonl",
        [
            said("user", "A month ago", NOW - timedelta(days=30)),
            said("user", "Yesterday", NOW - timedelta(days=1)),
        ],
    )

    intake = read(state, source_of(logs), backfill=timedelta(days=7))

    assert texts(intake.chunks) == ["Yesterday"]


def test_without_a_backfill_window_all_history_is_read(state: State, logs: Path) -> None:
    write_log(
        logs / "s1.jsonl",
        [
            said("user", "A year ago", NOW - timedelta(days=365)),
            said("user", "Yesterday", NOW - timedelta(days=1)),
        ],
    )

    assert texts(read(state, source_of(logs), backfill=None).chunks) == ["A year ago", "Yesterday"]


def test_a_new_file_of_a_source_already_seen_is_read_whole(state: State, logs: Path) -> None:
    source = source_of(logs)
    write_log(logs / "s1.jsonl", [said("user", "Yesterday", NOW - timedelta(days=1))])
    commit(state, read(state, source, backfill=timedelta(days=7)), source)

    write_log(logs / "s2.jsonl", [said("user", "An old session", NOW - timedelta(days=30))])
    intake = read(state, source, backfill=timedelta(days=7))

    assert texts(intake.chunks) == ["An old session"]


def test_each_source_keeps_its_own_cursors(state: State, tmp_path: Path, logs: Path) -> None:
    other = tmp_path / "logs" / "cos"
    other.mkdir()
    ops_file = write_log(logs / "a.jsonl", [said("user", "From ops", START)])
    cos_file = write_log(other / "b.jsonl", [said("user", "From cos", START)])
    ops, cos = source_of(logs), source_of(other, agent="cos")

    intake = read(state, ops, cos)

    assert sorted((c.agent, c.turns[0].text) for c in intake.chunks) == [
        ("cos", "From cos"),
        ("ops", "From ops"),
    ]
    assert (list(intake.new[ops.key]), list(intake.new[cos.key])) == (
        [str(ops_file)],
        [str(cos_file)],
    )
    assert intake.sources_by_file == {str(ops_file): ops.key, str(cos_file): cos.key}


def test_a_stored_cursor_that_cannot_be_decoded_reads_its_file_as_new(
    state: State, logs: Path
) -> None:
    path = write_log(logs / "s1.jsonl", [said("user", "Plan the launch", START)])
    source = source_of(logs)
    state.cursors.replace_source(source.agent, source.key, {str(path): '{"version": 99}'})
    state.meta.set(f"source.seen:{source.key}", NOW.isoformat())

    with capture_logs() as events:
        intake = read(state, source)

    assert texts(intake.chunks) == ["Plan the launch"]
    unreadable = [e for e in events if e["event"] == "source.cursor_unreadable"]
    assert [(e["path"], e["error"]) for e in unreadable] == [
        (str(path), "unknown cursor version 99")
    ]  # once, though the reader looks at the cursors more than once


# --- cleaning and the mention index -----------------------------------------------------------


def test_user_and_assistant_text_is_indexed_per_conversation_day(state: State, logs: Path) -> None:
    write_log(
        logs / "s1.jsonl",
        [
            said("user", "Call Jane Doe", START),
            said("tool", "Jane Doe's calendar is free", START + timedelta(minutes=1)),
            said("assistant", "Jane Doe is booked", START + timedelta(minutes=2)),
            said("user", "Jane Doe again", START + timedelta(days=1)),
        ],
    )

    read(state, source_of(logs))

    day_one = state.mentions.text_of("ops", "s1", date(2026, 3, 2))
    assert day_one is not None
    assert "Call Jane Doe" in day_one
    assert "Jane Doe is booked" in day_one
    assert "calendar" not in day_one  # tool output is not dialogue
    assert state.mentions.count_mentions(["Jane Doe"]) == 2


def test_a_read_that_does_not_index_leaves_the_index_alone(state: State, logs: Path) -> None:
    write_log(logs / "s1.jsonl", [said("user", "Call Jane Doe", START)])

    intake = read(state, source_of(logs), index_mentions=False)

    assert len(intake.chunks) == 1
    assert state.mentions.count_mentions(["Jane Doe"]) == 0


def test_reading_the_same_content_again_does_not_count_it_twice(state: State, logs: Path) -> None:
    write_log(logs / "s1.jsonl", [said("user", "Call Jane Doe", START)])
    source = source_of(logs)

    read(state, source)
    read(state, source)  # a heartbeat killed before its commit reads the same lines again

    assert state.mentions.text_of("ops", "s1", date(2026, 3, 2)) == "Call Jane Doe"


@pytest.mark.parametrize(("zone", "days"), [("UTC", 2), ("America/New_York", 1)])
def test_conversation_days_are_local_days_of_the_configured_zone(
    state: State, logs: Path, zone: str, days: int
) -> None:
    # 23:30 and 00:30 UTC are 18:30 and 19:30 of the same day in New York.
    late = datetime(2026, 3, 2, 23, 30, tzinfo=UTC)
    write_log(
        logs / "s1.jsonl",
        [
            said("user", "Jane Doe late", late),
            said("user", "Jane Doe later", late + timedelta(hours=1)),
        ],
    )

    intake = read(state, source_of(logs), zone=ZoneInfo(zone))

    assert len(intake.chunks) == days
    assert state.mentions.count_mentions(["Jane Doe"]) == days
    assert state.mentions.text_of("ops", "s1", date(2026, 3, 2)) is not None


def test_the_cleaned_text_is_what_is_indexed_and_chunked(state: State, logs: Path) -> None:
    write_log(logs / "s1.jsonl", [said("user", f"Jane Doe's token is {SECRET}", START)])

    intake = read(state, source_of(logs))

    indexed = state.mentions.text_of("ops", "s1", date(2026, 3, 2))
    assert indexed is not None
    assert "Jane Doe" in indexed
    assert SECRET not in indexed
    assert SECRET not in intake.chunks[0].render()
    assert "[REDACTED" in intake.chunks[0].render()


def test_a_conversation_the_cleaner_drops_is_not_indexed_nor_chunked_but_read_past(
    state: State, logs: Path
) -> None:
    path = write_log(logs / "s1.jsonl", [said("user", "Call Jane Doe", START)])
    source = source_of(logs)

    intake = read(state, source, cleaner=lambda conversation: None)

    assert intake.chunks == []
    assert state.mentions.count_mentions(["Jane Doe"]) == 0
    assert list(intake.new[source.key]) == [str(path)]  # committed like any other read


# --- order and the re-queued chunks -----------------------------------------------------------


def test_chunks_are_put_in_the_order_they_happened_each_once() -> None:
    late = make_chunk("late", when=START + timedelta(hours=2), session="b")
    early = make_chunk("early", when=START, session="c")
    tie_by_agent = make_chunk("same time", when=START + timedelta(hours=1), agent="zed")
    tie_first = make_chunk("same time", when=START + timedelta(hours=1), agent="abe")

    ordered = chronological([late, tie_by_agent, early, late, tie_first, early])

    assert ordered == [early, tie_first, tie_by_agent, late]


def quarantine(state: State, key: str, plan: str) -> None:
    """Fail the chunk in three heartbeats, which quarantines it."""
    for run in range(3):
        state.failures.record_failure(
            key, run_id=f"run-{run}", error="invalid", plan_json=plan, at=NOW
        )


def quarantine_chunk(state: State, chunk: Chunk) -> None:
    quarantine(state, chunk.key, json.dumps(chunk_to_json(chunk)))


def test_requeued_chunks_are_rebuilt_from_their_plans(state: State) -> None:
    chunk = make_chunk("Plan the launch", "with Jane Doe", routine="weekly")
    quarantine_chunk(state, chunk)
    assert state.failures.is_quarantined(chunk.key)
    assert requeued_chunks(state) == []  # quarantined, not yet put back by `memoryd retry`

    state.failures.requeue_all(NOW)
    [rebuilt] = requeued_chunks(state)

    assert rebuilt.key == chunk.key
    assert rebuilt == chunk


def test_a_requeued_chunk_whose_plan_is_unreadable_is_logged_and_skipped(state: State) -> None:
    good = make_chunk("Plan the launch")
    quarantine_chunk(state, good)
    no_turns = {**chunk_to_json(good), "turns": []}
    quarantine(state, "no-turns", json.dumps(no_turns))
    quarantine(state, "not-a-plan", "{}")
    quarantine(state, "bad-zone", json.dumps({**chunk_to_json(good), "zone": "Mars/Olympus"}))
    state.failures.requeue_all(NOW)

    with capture_logs() as logs:
        rebuilt = requeued_chunks(state)

    assert [chunk.key for chunk in rebuilt] == [good.key]
    assert sorted(
        entry["chunk_key"] for entry in logs if entry["event"] == "chunk.unreadable_plan"
    ) == ["bad-zone", "no-turns", "not-a-plan"]


class _SmallReads(SourceReader):
    """A reader whose per-run read share is a few hundred bytes."""

    def read(self, cursors: Mapping[str, FileCursor], **options: Any) -> ReadResult:
        return super().read(cursors, **{**options, "max_bytes": 300})


def test_a_source_stopped_at_its_read_share_says_more_is_waiting(state: State, logs: Path) -> None:
    rows = [said("user", f"line {n} " + "x" * 80, START + timedelta(minutes=n)) for n in range(20)]
    write_log(logs / "a.jsonl", rows)
    whole = read(state, source_of(logs))
    assert not whole.more
    settings = SourceSettings(format="jsonl", path=str(logs))
    small = Source("ops", f"jsonl:{logs}", _SmallReads("ops", settings))
    assert read(state, small).more


def test_a_read_share_and_followed_positions_read_on_without_moving_anything(
    state: State, logs: Path
) -> None:
    rows = [said("user", f"line {n} " + "x" * 80, START + timedelta(minutes=n)) for n in range(20)]
    write_log(logs / "a.jsonl", rows)
    source = source_of(logs)
    options: dict[str, Any] = {
        "clean": clean,
        "zone": UTC_ZONE,
        "chunk_tokens": 4000,
        "backfill": None,
        "now": NOW,
        "index_mentions": False,
        "read_share": 300,
    }
    first = read_sources([source], state, **options)
    assert first.more
    second = read_sources([source], state, positions=first.new, **options)
    assert second.new != first.new  # it went on from where the first share stopped
    assert state.cursors.for_source(source.agent, source.key) == {}  # nothing was committed
