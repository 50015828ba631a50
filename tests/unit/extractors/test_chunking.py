"""Chunks: one conversation, one local day, a bounded size, stable keys."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st
from tests.support.extractors import make_chunk, make_turn

from memoryd.extractors.chunking import cut_chunks
from memoryd.heartbeat.ahead import lean_plan
from memoryd.llm.base import estimate_tokens
from memoryd.sources.model import Conversation, Provenance, Turn

UTC_ZONE = ZoneInfo("UTC")


def turn(n: int, when: datetime, text: str = "hello", role: str = "user") -> Turn:
    return Turn(
        role=role,  # type: ignore[arg-type]
        text=text,
        timestamp=when,
        provenance=Provenance(file="/logs/a.jsonl", lines=(n, n)),
        trusted=role != "tool",
    )


def conversation(*turns: Turn) -> Conversation:
    return Conversation(agent="ops", session_id="s1", source_format="jsonl", turns=turns)


START = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)


def test_a_chunk_never_spans_two_days() -> None:
    conv = conversation(turn(1, START), turn(2, START + timedelta(hours=3)))
    chunks = cut_chunks(conv, UTC_ZONE, 10_000)
    assert [c.day.isoformat() for c in chunks] == ["2026-03-01", "2026-03-02"]


def test_days_are_taken_in_the_configured_zone() -> None:
    # 22:00 and 01:00 UTC are the same day in New York (17:00 and 20:00).
    conv = conversation(turn(1, START), turn(2, START + timedelta(hours=3)))
    chunks = cut_chunks(conv, ZoneInfo("America/New_York"), 10_000)
    assert len(chunks) == 1
    assert chunks[0].day.isoformat() == "2026-03-01"
    assert "[17:00] user:" in chunks[0].render()


def test_a_long_day_is_split_within_the_budget_with_provenance() -> None:
    turns = [turn(i, START + timedelta(minutes=i), "word " * 200) for i in range(1, 21)]
    chunks = cut_chunks(conversation(*turns), UTC_ZONE, 1000)
    assert len(chunks) > 1
    assert all(estimate_tokens(c.render()) <= 1000 for c in chunks)
    assert [t for c in chunks for t in c.turns] == turns
    assert chunks[0].line_range[0] == 1
    assert chunks[-1].line_range[1] == 20
    assert [c.part for c in chunks] == list(range(len(chunks)))


def test_a_huge_turn_is_split_into_pieces() -> None:
    big = turn(7, START, "line of text\n" * 5000)
    chunks = cut_chunks(conversation(big), UTC_ZONE, 1000)
    assert len(chunks) > 5
    assert "".join(t.text for c in chunks for t in c.turns) == big.text
    assert all(t.provenance.lines == (7, 7) for c in chunks for t in c.turns)


def test_tool_output_alone_is_not_dialogue() -> None:
    chunks = cut_chunks(conversation(turn(1, START, "ls output", role="tool")), UTC_ZONE, 1000)
    assert not chunks[0].has_dialogue
    assert "tool (untrusted output):" in chunks[0].render()


def test_keys_are_stable_and_sensitive_to_content() -> None:
    conv = conversation(turn(1, START), turn(2, START + timedelta(minutes=1)))
    first = cut_chunks(conv, UTC_ZONE, 1000)[0].key
    assert cut_chunks(conv, UTC_ZONE, 1000)[0].key == first
    changed = conversation(turn(1, START), turn(2, START + timedelta(minutes=1), "bye"))
    assert cut_chunks(changed, UTC_ZONE, 1000)[0].key != first


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=3000), min_size=1, max_size=30),
    budget=st.integers(min_value=200, max_value=5000),
)
def test_chunking_keeps_every_character_in_order(sizes: list[int], budget: int) -> None:
    turns = [turn(i, START + timedelta(minutes=i), "x" * size) for i, size in enumerate(sizes)]
    chunks = cut_chunks(conversation(*turns), UTC_ZONE, budget)
    assert "".join(t.text for c in chunks for t in c.turns) == "".join(t.text for t in turns)
    # A prefix of the turns always cuts the same leading chunks (stable keys on re-reads).
    shorter = cut_chunks(conversation(*turns[:-1]), UTC_ZONE, budget) if len(turns) > 1 else []
    for old, new in zip(shorter[:-1], chunks, strict=False):
        assert old.key == new.key


def test_a_chunk_survives_a_json_round_trip() -> None:
    from memoryd.extractors.chunking import chunk_from_json, chunk_to_json

    original = cut_chunks(
        conversation(turn(1, START, "hi"), turn(2, START, "out", role="tool")),
        ZoneInfo("Europe/Berlin"),
        1000,
    )[0]
    rebuilt = chunk_from_json(chunk_to_json(original))
    assert rebuilt == original
    assert rebuilt.key == original.key


def test_the_journal_plan_writes_each_file_once_and_its_lines() -> None:
    chunk = make_chunk("one", "two", "three", first_line=7)
    plan = json.loads(lean_plan(chunk))
    assert plan == {
        "agent": "ops",
        "session_id": "s1",
        "day": "2026-03-02",
        "part": 0,
        "files": ["/logs/ops/s1.jsonl"],
        "from": [0, 7],
        "to": [0, 9],
        "digest": chunk.digest,
    }
    # A chunk across two files (a rotated log): `from` and `to` name theirs by position.
    later = make_turn("four", chunk.turns[-1].timestamp, line=2, file="/logs/ops/a-rotated.jsonl")
    plan = json.loads(lean_plan(replace(chunk, turns=(*chunk.turns, later))))
    assert plan["files"] == ["/logs/ops/a-rotated.jsonl", "/logs/ops/s1.jsonl"]
    assert (plan["from"], plan["to"]) == ([1, 7], [0, 2])
    assert lean_plan(chunk).count(chunk.files[0]) == 1


def test_a_chunk_read_again_has_a_key_of_its_own_that_survives_json() -> None:
    from memoryd.extractors.chunking import chunk_from_json, chunk_to_json

    original = cut_chunks(conversation(turn(1, START, "hi")), UTC_ZONE, 1000)[0]
    again = replace(original, reread="0123456789ab")
    assert again.key != original.key  # its answer is never taken for the first reading's
    assert replace(original, reread="ba9876543210").key not in {original.key, again.key}
    rebuilt = chunk_from_json(chunk_to_json(again))
    assert (rebuilt, rebuilt.key) == (again, again.key)
    assert "reread" not in chunk_to_json(original)  # the first reading's plans are unchanged
