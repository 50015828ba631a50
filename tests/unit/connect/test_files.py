"""The shared edits: marked blocks in and out, JSON in the file's own indentation, atomic writes
with backups, diffs."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memoryd.connect.files import (
    BLOCK_BEGIN,
    BLOCK_END,
    FileEdit,
    apply_edits,
    dump_json,
    with_block,
    without_block,
    without_block_restored,
)

lines = st.lists(
    st.text(alphabet=st.characters(blacklist_characters="\r\n<"), max_size=20), max_size=6
)


@given(lines)
def test_a_block_put_in_then_taken_out_gives_the_text_back(body: list[str]) -> None:
    text = "".join(f"{line}\n" for line in body) or None
    with_it = with_block(text, "remember things")
    assert with_it.count(BLOCK_BEGIN) == 1 and with_it.endswith(f"{BLOCK_END}\n")
    assert with_block(with_it, "remember things") == with_it
    assert without_block(with_it) == (text if text and text.strip() else None)


def test_a_block_is_replaced_in_place() -> None:
    text = with_block("# Title\n", "old") + "\n## After\n"
    assert with_block(text, "new") == with_block("# Title\n", "new") + "\n## After\n"


def test_a_file_without_a_final_newline_comes_back_from_its_backup(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text("no newline", encoding="utf-8")
    apply_edits([FileEdit(path, "no newline", with_block("no newline", "x"))])
    assert (tmp_path / "AGENTS.md.memoryd-backup").read_text(encoding="utf-8") == "no newline"
    current = path.read_text(encoding="utf-8")
    assert without_block_restored(path, current) == "no newline"


def test_json_keeps_the_files_indentation_and_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    before = '{\n\t"a": 1\n}'
    after = dump_json({"a": 1, "b": [2]}, before, path)
    assert after == '{\n\t"a": 1,\n\t"b": [\n\t\t2\n\t]\n}'
    four = '{\n    "a": 1\n}\n'
    assert dump_json({"a": 2}, four, path) == '{\n    "a": 2\n}\n'
    assert dump_json(json.loads(four), four, path) == four  # unchanged: the very bytes
    assert dump_json({}, four, path) is None  # nothing left: the file goes
    assert dump_json({}, None, path) is None


def test_apply_writes_creates_removes_and_diffs(tmp_path: Path) -> None:
    new = FileEdit(tmp_path / "deep" / "new.json", None, "{}\n")
    gone = tmp_path / "gone.md"
    gone.write_text("bye\n", encoding="utf-8")
    removal = FileEdit(gone, "bye\n", None)
    assert (new.action, removal.action) == ("created", "removed")
    assert new.diff().startswith("--- /dev/null\n+++ ")
    assert removal.diff().endswith("-bye\n")
    assert FileEdit(gone, "x", "x").diff() == ""
    backups = apply_edits([new, removal])
    assert (tmp_path / "deep" / "new.json").read_text(encoding="utf-8") == "{}\n"
    assert not gone.exists() and backups == [tmp_path / "gone.md.memoryd-backup"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
