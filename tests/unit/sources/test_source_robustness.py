"""Isolation and bounded memory: garbage, non-UTF-8, huge lines, broken files never stop reads."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs
from tests.support.sources import make_reader, read_once, read_until_done, texts

from memoryd.settings import SOURCE_FORMATS
from memoryd.sources.cursor import CursorError, FileCursor
from memoryd.sources.reader import SourceReader
from memoryd.sources.registry import FORMATS, UnknownFormatError, get_format

GOOD_LINE = json.dumps(
    {"role": "user", "content": "still here", "timestamp": "2026-01-01T00:00:00Z"}
)
SUFFIX = {
    "claude-code": "x.jsonl",
    "codex": "x.jsonl",
    "openclaw": "x.jsonl",
    "paperclip": "x.ndjson",
    "chatgpt-export": "x.json",
    "jsonl": "x.jsonl",
    "markdown": "x.md",
}


def test_every_configurable_format_has_a_reader() -> None:
    assert set(FORMATS) == set(SOURCE_FORMATS)
    with pytest.raises(UnknownFormatError, match="unknown transcript format 'yaml'"):
        get_format("yaml")


def test_each_reader_is_registered_under_its_own_name_and_made_once() -> None:
    # The registry imports a format's module on its first lookup (an idle heartbeat pays
    # only for the formats its configuration names).
    for name in FORMATS:
        assert FORMATS[name].name == name
        assert get_format(name) is FORMATS[name]
    assert len(FORMATS) == len(SOURCE_FORMATS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(sorted(SUFFIX)), garbage=st.binary(max_size=600))
def test_garbage_never_crashes_a_reader(fmt: str, garbage: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / SUFFIX[fmt]
        path.write_bytes(garbage)
        reader = make_reader(fmt, path)
        first = read_once(reader)
        with path.open("ab") as handle:
            handle.write(b"\n\xff\xfe{not json}\n" + garbage[::-1])
        second = read_once(reader, first.cursors)
    for result in (first, second):
        assert all(skip.path == str(path) for skip in result.skipped)
        assert result.stats.lines_read >= 0


def test_malformed_and_non_utf8_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    nested = b"[" * 100_000 + b"]" * 100_000
    path.write_bytes(
        b"{broken\n\xff\xfe\xfa\n[1, 2]\n" + nested + b"\n" + GOOD_LINE.encode() + b"\n"
    )
    with capture_logs() as logs:
        result = read_once(make_reader("jsonl", path))
    assert texts(result) == ["still here"]
    assert result.stats.malformed_lines == 4
    assert result.skipped == []
    assert any(log["event"] == "source.lines_skipped" and log["malformed"] == 4 for log in logs)


def test_lone_surrogates_in_json_become_replacement_characters(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(
        '{"role": "tool", "content": "bin \\ud800 \\ud83d\\ude00 end"}\n', encoding="utf-8"
    )
    turn_texts = texts(read_once(make_reader("jsonl", path)))
    assert turn_texts == ["bin \ufffd \U0001f600 end"]
    turn_texts[0].encode("utf-8")  # writable


def test_a_50_megabyte_single_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    block = b"x" * (1 << 20)
    with path.open("wb") as handle:
        handle.write(b'{"role": "user", "content": "')
        for _ in range(50):
            handle.write(block)
        handle.write(b'"}\n' + GOOD_LINE.encode() + b"\n")
    reader = SourceReader(
        "tester",
        make_reader("jsonl", path).source,
        max_line_bytes=4 << 20,
    )
    collected, result, reads = read_until_done(reader)
    assert collected == ["still here"]
    assert reads > 1  # the byte budget stops a read inside the long line; the next goes on
    assert result.cursors[str(path)].line == 2
    assert result.cursors[str(path)].in_long_line is False


def test_a_huge_line_still_being_written_is_skipped_across_reads(tmp_path: Path) -> None:
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b'{"role": "user", "content": "' + b"y" * 300_000)
    reader = SourceReader(
        "tester", make_reader("jsonl", path).source, max_line_bytes=100_000, block_bytes=65_536
    )
    first = read_once(reader)
    assert first.cursors[str(path)].in_long_line is True
    assert first.stats.long_lines == 1
    with path.open("ab") as handle:
        handle.write(b"y" * 300_000 + b'"}\n' + GOOD_LINE.encode() + b"\n")
    second = read_once(reader, first.cursors)
    assert texts(second) == ["still here"]
    assert second.stats.long_lines == 0  # the same long line, not counted twice
    assert second.cursors[str(path)].line == 2


def test_a_broken_file_is_logged_and_the_other_files_go_on(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "bad.ndjson.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    chunk = (
        json.dumps(
            {"type": "assistant", "message": {"content": [{"type": "text", "text": "fine"}]}}
        )
        + "\n"
    )
    (folder / "good.ndjson").write_text(
        json.dumps({"ts": "2026-01-01T00:00:00Z", "stream": "stdout", "chunk": chunk}) + "\n"
    )
    with capture_logs() as logs:
        result = read_once(make_reader("paperclip", folder))
    assert texts(result) == ["fine"]
    assert [skip.path for skip in result.skipped] == [str(folder / "bad.ndjson.gz")]
    skipped = [log for log in logs if log["event"] == "source.skipped"]
    assert len(skipped) == 1
    assert skipped[0]["path"] == str(folder / "bad.ndjson.gz")
    assert skipped[0]["log_level"] == "warning"
    assert str(folder / "bad.ndjson.gz") not in result.cursors


def test_a_truncated_gzip_keeps_its_old_cursor(tmp_path: Path) -> None:
    path = tmp_path / "run-1.ndjson.gz"
    data = gzip.compress(
        b"".join(
            json.dumps({"ts": "t", "stream": "stdout", "chunk": "x\n"}).encode() + b"\n"
            for _ in range(50)
        )
    )
    path.write_bytes(data)
    reader = make_reader("paperclip", path)
    first = read_once(reader)
    assert first.skipped == []
    path.write_bytes(data[: len(data) // 2])
    second = read_once(reader, first.cursors)
    assert len(second.skipped) == 1
    assert second.cursors[str(path)] == first.cursors[str(path)]


def test_a_deeply_nested_chatgpt_export_is_skipped(tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    export.write_text("[" + "[" * 100_000 + "]" * 100_000 + "]", encoding="utf-8")
    result = read_once(make_reader("chatgpt-export", export))
    assert [skip.reason for skip in result.skipped] == ["nested too deeply to parse"]


def test_a_broken_chatgpt_export_is_skipped_and_retried(tmp_path: Path) -> None:
    export = tmp_path / "conversations.json"
    export.write_text('[{"id": "c1", "mapping": {}}, {"id": ', encoding="utf-8")
    reader = make_reader("chatgpt-export", export)
    result = read_once(reader)
    assert len(result.skipped) == 1
    assert "broken JSON" in result.skipped[0].reason or "ends early" in result.skipped[0].reason
    assert result.cursors == {}


def test_stored_cursors_that_are_not_cursors_are_refused() -> None:
    with pytest.raises(CursorError):
        FileCursor.from_json("{}")
    with pytest.raises(CursorError):
        FileCursor.from_json("not json")
    with pytest.raises(CursorError, match="expected int"):
        FileCursor.from_json(
            json.dumps(
                {
                    "version": 1,
                    "path": "p",
                    "identity": {"device": 1, "inode": True, "head_sha256": "x", "head_length": 0},
                    "position": 0,
                    "line": 0,
                    "size": 0,
                    "mtime_ns": 0,
                    "at_eof": False,
                    "in_long_line": False,
                    "not_before": None,
                    "reread_until": None,
                    "seen": [],
                    "horizon": None,
                    "last_timestamp": None,
                    "state": {},
                }
            )
        )


def test_a_missing_source_path_yields_nothing(tmp_path: Path) -> None:
    result = read_once(make_reader("claude-code", tmp_path / "not-yet"))
    assert result.conversations == []
    assert result.cursors == {}
    assert result.skipped == []
