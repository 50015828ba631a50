"""The host record's generation read without parsing the record (a job compares it with the
state database's before every run, and the record holds a cursor per transcript file)."""

from __future__ import annotations

import json
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.store.conftest import MemoryTransaction

from memoryd.errors import CorruptFileError
from memoryd.store.hosts import (
    HostRecord,
    PendingEntry,
    read_host_generation,
    record_generation,
    record_path,
    render_host_record,
)


def files(texts: dict[str, str]) -> MemoryTransaction:
    tx = MemoryTransaction()
    tx.files.update(texts)
    return tx


def record(generation: int, trap: str = "") -> HostRecord:
    cursor = json.dumps({"inode": 7, "offset": 120, "note": trap})
    return HostRecord(
        host="box",
        generation=generation,
        sources={("ops", "jsonl:/logs"): {"/logs/a.jsonl": cursor, "/logs/b.jsonl": cursor}},
        seen=frozenset({"jsonl:/logs"}),
        pending=(
            PendingEntry(
                kind="person",
                key="ann",
                conversation_date=date(2026, 3, 9),
                entity_name="Ann",
                fact={"statement": trap or "likes tea"},
                source={"session": "s1"},
            ),
        ),
        ahead={"/logs/a.jsonl": ((3, 9),)},
    )


# Text that looks like the generation's line, wherever a string of the record can hold it.
TRAPS = ['\n  "generation": 999,\n', '  "generation": 5,', "", '"}\n  "generation": 1,\n{"']


@pytest.mark.parametrize("trap", TRAPS)
@pytest.mark.parametrize("generation", [0, 1, 42, 10**12])
def test_a_canonical_record_gives_its_generation_without_a_parse(
    generation: int, trap: str
) -> None:
    assert record_generation(render_host_record(record(generation, trap))) == generation


@given(generation=st.integers(min_value=0, max_value=10**15), trap=st.text(max_size=40))
def test_the_fast_read_agrees_with_the_record_whatever_its_strings(
    generation: int, trap: str
) -> None:
    assert record_generation(render_host_record(record(generation, trap))) == generation


@pytest.mark.parametrize(
    "reshape",
    [
        lambda text: json.dumps(json.loads(text)),  # compact: one line
        lambda text: json.dumps(json.loads(text), indent=4),  # another indent
        lambda text: text.rstrip("\n"),  # no final newline
    ],
)
def test_a_record_in_another_form_is_parsed_whole(reshape: object) -> None:
    assert callable(reshape)
    text = reshape(render_host_record(record(7)))
    assert record_generation(text) is None
    tx = files({record_path("box"): text})
    assert read_host_generation(tx, "box") == 7


def test_a_record_cut_short_or_with_the_key_twice_is_left_to_the_full_parse() -> None:
    text = render_host_record(record(7))
    cut = text[: len(text) // 2]
    assert record_generation(cut) is None
    with pytest.raises(CorruptFileError):
        read_host_generation(files({record_path("box"): cut}), "box")
    twice = text.replace('  "generation": 7,\n', '  "generation": 7,\n  "generation": 8,\n')
    assert record_generation(twice) is None
    assert read_host_generation(files({record_path("box"): twice}), "box") == 8  # as JSON says


def test_a_record_of_another_format_or_a_bad_generation_still_fails_loudly() -> None:
    text = render_host_record(record(7))
    other_format = text.replace('  "format": 1,', '  "format": 2,')
    assert record_generation(other_format) is None
    with pytest.raises(CorruptFileError, match="unknown record format"):
        read_host_generation(files({record_path("box"): other_format}), "box")
    negative = text.replace('  "generation": 7,', '  "generation": -7,')
    assert record_generation(negative) is None
    with pytest.raises(CorruptFileError, match="whole number"):
        read_host_generation(files({record_path("box"): negative}), "box")


def test_no_record_has_no_generation() -> None:
    assert read_host_generation(files({}), "box") is None
