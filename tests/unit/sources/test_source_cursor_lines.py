"""Cursor arithmetic and line scanning: general rules, checked as properties."""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.sources._lines import LineScan, last_line_end
from memoryd.sources.cursor import SEEN_LIMIT, FileCursor, FileIdentity, key_digest

CONTENT = st.lists(
    st.one_of(st.binary(max_size=40), st.just(b"\n"), st.just(b"x" * 90)), max_size=40
).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(content=CONTENT, block=st.integers(1, 64), max_line=st.integers(1, 80))
def test_scan_yields_exactly_the_complete_lines_that_fit(
    content: bytes, block: int, max_line: int
) -> None:
    scan = LineScan(io.BytesIO(content), 0, 0, budget=1 << 30, max_line=max_line, block=block)
    lines = [(number, offset, raw) for number, offset, raw in scan]
    *complete, tail = content.split(b"\n")
    assert [raw for _, _, raw in lines] == [line for line in complete if len(line) <= max_line]
    assert scan.line == len(complete)
    assert [number for number, _, _ in lines] == [
        index + 1 for index, line in enumerate(complete) if len(line) <= max_line
    ]
    for _, offset, raw in lines:
        assert content[offset : offset + len(raw) + 1] == raw + b"\n"
    assert scan.reached_eof
    if len(tail) > max_line:
        assert scan.in_long_line
        assert scan.position == len(content)
        assert scan.long_lines == sum(len(line) > max_line for line in complete) + 1
    else:
        assert not scan.in_long_line
        assert scan.position == content.rfind(b"\n") + 1
        assert scan.long_lines == sum(len(line) > max_line for line in complete)


@settings(max_examples=200, deadline=None)
@given(content=CONTENT, budget=st.integers(1, 200), block=st.integers(1, 64))
def test_budgeted_scans_resume_to_the_same_lines(content: bytes, budget: int, block: int) -> None:
    whole = [
        raw
        for _, _, raw in LineScan(
            io.BytesIO(content), 0, 0, budget=1 << 30, max_line=50, block=block
        )
    ]
    pieces: list[bytes] = []
    position, line, long_line = 0, 0, False
    for _ in range(len(content) + 2):
        scan = LineScan(
            io.BytesIO(content),
            position,
            line,
            budget=budget,
            max_line=50,
            block=block,
            in_long_line=long_line,
        )
        pieces.extend(raw for _, _, raw in scan)
        assert scan.position >= position
        position, line, long_line = scan.position, scan.line, scan.in_long_line
        if scan.reached_eof:
            break
    assert pieces == whole


@given(content=CONTENT)
def test_last_line_end_counts_newlines(content: bytes) -> None:
    end, lines = last_line_end(io.BytesIO(content), len(content), block=7)
    assert end == content.rfind(b"\n") + 1
    assert lines == content.count(b"\n")


IDENTITY = FileIdentity(device=1, inode=2, head_sha256="0" * 64, head_length=10)


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(0, 400), max_size=8), shuffle=st.randoms(use_true_random=False))
def test_remembered_keys_stay_bounded_and_the_horizon_covers_what_fell_out(
    sizes: list[int], shuffle: random.Random
) -> None:
    cursor = FileCursor(path="p", identity=IDENTITY)
    everything: list[tuple[str, datetime]] = []
    base = datetime(2026, 1, 1, tzinfo=UTC)
    counter = 0
    for size in sizes:
        offsets = list(range(size))
        shuffle.shuffle(offsets)  # times inside a read need not be in order
        keys = [
            (key_digest(f"k{counter + o}"), base + timedelta(seconds=counter + o)) for o in offsets
        ]
        counter += size
        everything.extend(keys)
        cursor = cursor.remember(keys)
        cursor = FileCursor.from_json(cursor.to_json())
    assert len(cursor.seen) <= SEEN_LIMIT
    assert sum(count for count, _ in cursor.seen_batches) == len(cursor.seen)
    assert list(cursor.seen) == [digest for digest, _ in everything][-SEEN_LIMIT:]
    dropped = everything[: max(0, len(everything) - SEEN_LIMIT)]
    if dropped:
        assert cursor.horizon is not None
        assert cursor.horizon >= max(stamp for _, stamp in dropped)
        # never beyond the newest time of a read that lost keys
        assert cursor.horizon <= max(stamp for _, stamp in everything)
    else:
        assert cursor.horizon is None


def test_horizon_is_exact_when_whole_reads_fall_out() -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    cursor = FileCursor(path="p", identity=IDENTITY)
    for read in range(3):
        keys = [
            (key_digest(f"{read}-{i}"), base + timedelta(hours=read, seconds=i))
            for i in range(SEEN_LIMIT // 2)
        ]
        cursor = cursor.remember(keys)
    assert cursor.horizon == base + timedelta(hours=0, seconds=SEEN_LIMIT // 2 - 1)
    assert len(cursor.seen_batches) == 2


@given(
    position=st.integers(0, 1 << 40),
    line=st.integers(0, 1 << 30),
    state=st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(), st.none())),
    stamp=st.none() | st.datetimes(timezones=st.just(UTC)),
    seen=st.lists(st.text(alphabet="0123456789abcdef", min_size=12, max_size=12), max_size=5),
)
def test_cursor_json_round_trips(
    position: int, line: int, state: dict[str, object], stamp: datetime | None, seen: list[str]
) -> None:
    cursor = FileCursor(
        path="/x/ünï.jsonl",
        identity=IDENTITY,
        position=position,
        line=line,
        not_before=stamp,
        horizon=stamp,
        last_timestamp=stamp,
        seen=tuple(seen),
        state=state,
    )
    text = cursor.to_json()
    assert FileCursor.from_json(text) == cursor
    assert FileCursor.from_json(text).to_json() == text
