"""Stored cursors decoded only when their file changed (an idle heartbeat over
thousands of files decodes none), and a read with them finds exactly what a read with the
decoded cursors finds: appends, rotation, truncation, replacement, deletion, new files, the
first-sight cutoff, the byte budget and unreadable files."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.incremental import BASE, jsonl_file, stamp
from tests.support.sources import LOCKED, as_unprivileged, make_reader, read_once, texts

from memoryd.sources._files import unchanged
from memoryd.sources.cursor import CursorError, FileCursor, FileIdentity, StoredCursors
from memoryd.sources.reader import ReadResult, SourceReader


def line(text: str, index: int) -> str:
    return json.dumps({"role": "user", "content": text, "timestamp": stamp(index)}) + "\n"


def stored(result: ReadResult, before: dict[str, str] | None = None) -> dict[str, str]:
    """The texts a caller commits after a read: kept ones as they were, the others encoded."""
    texts_now = {path: (before or {})[path] for path in result.kept}
    texts_now.update((path, cursor.to_json()) for path, cursor in result.cursors.items())
    return texts_now


def both_ways(
    reader: SourceReader, before: dict[str, str], **options: object
) -> tuple[ReadResult, ReadResult]:
    """The same read with decoded cursors and with stored ones (files are only read)."""
    decoded = {path: FileCursor.from_json(text) for path, text in before.items()}
    plain = reader.read(decoded, **options)  # type: ignore[arg-type]
    lazy = reader.read(StoredCursors(before), **options)  # type: ignore[arg-type]
    return plain, lazy


def assert_same(plain: ReadResult, lazy: ReadResult, before: dict[str, str]) -> None:
    assert texts(lazy) == texts(plain)
    assert stored(lazy, before) == {path: c.to_json() for path, c in plain.cursors.items()}
    assert (lazy.more, lazy.unreadable, lazy.skipped) == (
        plain.more,
        plain.unreadable,
        plain.skipped,
    )
    assert lazy.stats == plain.stats
    assert plain.kept == []
    assert not set(lazy.kept) & set(lazy.cursors)


def test_a_read_with_nothing_new_decodes_no_cursor(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.jsonl").write_text(jsonl_file(4), encoding="utf-8")
    reader = make_reader("jsonl", tmp_path)
    before = stored(read_once(reader))
    cursors = StoredCursors(before)
    decodes: list[str] = []
    original = cursors._decode

    def counting(path: str) -> FileCursor | None:
        decodes.append(path)
        return original(path)

    cursors._decode = counting  # type: ignore[method-assign]
    result = reader.read(cursors, since=None, first_sight=False)
    assert sorted(result.kept) == sorted(before)
    assert result.cursors == {}
    assert decodes == []
    assert result.stats.files_seen == 3
    with (tmp_path / "b.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(line("new in b", 50))
    again = reader.read(StoredCursors(before), since=None, first_sight=False)
    assert texts(again) == ["new in b"]
    assert sorted(again.kept) == sorted(set(before) - {str(tmp_path / "b.jsonl")})


def test_every_change_is_found_as_with_decoded_cursors(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("keep", "grow", "rotate", "cut", "swap", "gone"):
        (folder / f"{name}.jsonl").write_text(jsonl_file(5), encoding="utf-8")
    reader = make_reader("jsonl", folder / "*.jsonl*")
    before = stored(read_once(reader))
    with (folder / "grow.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(line("grown", 40))
    with (folder / "rotate.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(line("before rotation", 41))
    (folder / "rotate.jsonl").rename(folder / "rotate.jsonl.1")
    (folder / "rotate.jsonl").write_text(line("after rotation", 42), encoding="utf-8")
    (folder / "cut.jsonl").write_text(line("after truncation", 43), encoding="utf-8")
    replacement = folder / "swap.tmp"
    replacement.write_text(jsonl_file(5) + line("after replacement", 44), encoding="utf-8")
    os.replace(replacement, folder / "swap.jsonl")
    (folder / "gone.jsonl").unlink()
    (folder / "new.jsonl").write_text(line("a new file", 45), encoding="utf-8")
    plain, lazy = both_ways(reader, before, since=None, first_sight=False)
    assert_same(plain, lazy, before)
    # (Which files take over a freed inode is up to the file system: the two reads agree.)
    assert {"grown", "before rotation", "after rotation", "after truncation"} <= set(texts(lazy))
    assert {"after replacement", "a new file"} <= set(texts(lazy))
    assert lazy.kept == [str(folder / "keep.jsonl")]


def test_the_budget_and_the_first_sight_cutoff_apply_alike(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.jsonl").write_text(jsonl_file(30), encoding="utf-8")
    reader = make_reader("jsonl", tmp_path)
    since = BASE + timedelta(seconds=20)
    first = read_once(reader, since=since, first_sight=True, max_bytes=500)
    assert first.more
    before, found, reads = stored(first), texts(first), 1
    while True:
        plain, lazy = both_ways(reader, before, since=since, first_sight=False, max_bytes=500)
        assert_same(plain, lazy, before)
        before, found, reads = stored(lazy, before), found + texts(lazy), reads + 1
        if not lazy.more:
            break
    assert reads > 2
    assert sorted(found) == sorted(f"text {i}" for i in range(20, 30) for _ in range(4))


def test_a_file_that_cannot_be_read_keeps_its_cursor_alike(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    (folder / "locked").mkdir(parents=True)
    (folder / "locked" / "a.jsonl").write_text(jsonl_file(3), encoding="utf-8")
    (folder / "open.jsonl").write_text(jsonl_file(3), encoding="utf-8")
    reader = make_reader("jsonl", folder)
    before = stored(read_once(reader))
    (folder / "locked").chmod(LOCKED)
    try:
        plain, lazy = as_unprivileged(
            lambda: both_ways(reader, before, since=None, first_sight=False)
        )
    finally:
        (folder / "locked").chmod(0o755)
    assert_same(plain, lazy, before)
    assert lazy.skipped and str(folder / "locked" / "a.jsonl") in lazy.cursors


def test_a_cursor_that_does_not_decode_is_absent_and_reported_once(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(jsonl_file(3), encoding="utf-8")
    reader = make_reader("jsonl", path)
    good = stored(read_once(reader))[str(path)]
    newer = good.replace('"version":2}', '"version":3}')
    reported: list[tuple[str, str]] = []

    def report(where: str, error: CursorError) -> None:
        reported.append((where, str(error)))

    cursors = StoredCursors({str(path): newer}, report)
    assert not cursors.unchanged(str(path), path.stat())
    assert str(path) not in cursors
    assert dict(cursors) == {}
    assert reported == [(str(path), "unknown cursor version 3")]
    result = reader.read(StoredCursors({str(path): newer}, report), since=None, first_sight=False)
    assert texts(result) == ["text 0", "text 1", "text 2"]  # read as new, as before


def _as_version_1(text: str) -> str:
    """The cursor text as format version 1 wrote it: `seen` a list of hex digests."""
    document = json.loads(text)
    document["seen"] = list(FileCursor.from_json(text).seen)
    document["version"] = 1
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_a_version_1_cursor_is_still_read_and_written_again_as_version_2(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(jsonl_file(40), encoding="utf-8")
    reader = make_reader("jsonl", path)
    good = stored(read_once(reader))[str(path)]
    old = _as_version_1(good)
    assert FileCursor.from_json(old) == FileCursor.from_json(good)
    assert len(FileCursor.from_json(good).seen) == 40
    # A digest takes 8 characters instead of 15 (quotes and comma).
    assert len(old) - len(good) == 40 * 7 - 1
    cursors = StoredCursors({str(path): old})
    assert cursors.unchanged(str(path), path.stat())  # read without decoding, like version 2
    with path.open("a", encoding="utf-8") as handle:
        handle.write(jsonl_file(41).splitlines(keepends=True)[-1])
    result = reader.read(StoredCursors({str(path): old}), since=None, first_sight=False)
    assert texts(result) == ["text 40"]
    assert result.cursors[str(path)].to_json().endswith(',"version":2}')


def test_damaged_seen_digests_are_a_cursor_error() -> None:
    good = cursor_with(seen=("0123456789ab", "ba9876543210")).to_json()
    assert '"seen":"ASNFZ4mruph2VDIQ"' in good
    for damaged in ('"seen":"ASNFZ4mrupg"', '"seen":"AS*FZ4mrupg="', '"seen":["x"]', '"seen":7'):
        with pytest.raises(CursorError):
            FileCursor.from_json(good.replace('"seen":"ASNFZ4mruph2VDIQ"', damaged))
    with pytest.raises(ValueError, match="not a record digest"):
        cursor_with(seen=("abc",)).to_json()


def test_a_cursor_not_in_canonical_form_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(jsonl_file(3), encoding="utf-8")
    reader = make_reader("jsonl", path)
    good = stored(read_once(reader))[str(path)]
    spaced = json.dumps(json.loads(good), indent=1)
    cursors = StoredCursors({str(path): spaced})
    assert not cursors.unchanged(str(path), path.stat())
    result = reader.read(cursors, since=None, first_sight=False)
    assert result.kept == [] and texts(result) == []
    assert result.cursors[str(path)] == FileCursor.from_json(good)


def cursor_with(**changes: object) -> FileCursor:
    base = FileCursor(
        path="/x/a.jsonl",
        identity=FileIdentity(device=5, inode=77, head_sha256="ab" * 32, head_length=4096),
        position=100,
        line=3,
        size=100,
        mtime_ns=1_700_000_000_000_000_000,
        at_eof=True,
        seen=("0123456789ab",),
        seen_batches=((1, BASE),),
        horizon=BASE,
        last_timestamp=BASE,
        state={"a": [1], "k": [1, {"size": 3}], "path": '"size":1,', "size": 9},
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def status(device: int, inode: int, size: int, mtime_ns: int) -> os.stat_result:
    """A stat result with the four fields the comparison reads."""
    return os.stat_result(
        (0o100644, inode, device, 1, 0, 0, size, 0, 0, 0), {"st_mtime_ns": mtime_ns}
    )


@given(
    at_eof=st.booleans(),
    found=st.tuples(
        st.sampled_from([5, 6]),
        st.sampled_from([77, 78]),
        st.sampled_from([100, 101]),
        st.sampled_from([1_700_000_000_000_000_000, 5]),
    ),
    path=st.one_of(st.text(max_size=12), st.just('a],"size":7,"state":{b.jsonl')),
)
def test_the_look_at_the_text_agrees_with_the_decoded_cursor(
    at_eof: bool, found: tuple[int, int, int, int], path: str
) -> None:
    cursor = cursor_with(at_eof=at_eof, path=path)
    cursors = StoredCursors({"k": cursor.to_json()})
    assert cursors.unchanged("k", status(*found)) == unchanged(cursor, status(*found))


@pytest.mark.parametrize("field", ["at_eof", "size", "mtime_ns", "inode", "device"])
def test_each_compared_field_counts(field: str) -> None:
    cursor = cursor_with()
    same = status(5, 77, 100, 1_700_000_000_000_000_000)
    cursors = StoredCursors({"k": cursor.to_json()})
    assert cursors.unchanged("k", same)
    changed = {
        "at_eof": cursor_with(at_eof=False),
        "size": cursor_with(size=99),
        "mtime_ns": cursor_with(mtime_ns=1),
        "inode": cursor_with(identity=FileIdentity(5, 1, "ab" * 32, 4096)),
        "device": cursor_with(identity=FileIdentity(1, 77, "ab" * 32, 4096)),
    }[field]
    assert not StoredCursors({"k": changed.to_json()}).unchanged("k", same)
