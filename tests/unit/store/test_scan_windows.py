"""The commit-time secret scan of a large rewritten file reads only what is new
(`memoryd.worktree._scanwindows`, `memoryd.worktree._commit_scan.parts_to_scan`)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.foreign_edits import SECRET, committed, fake_scanner, git, seeded_store, unit_for

from memoryd.worktree._scanwindows import changed_windows

lines = st.lists(st.sampled_from(["", "a", "b", "c", "d", "a b", "x"]), max_size=24)


@settings(max_examples=400, deadline=None)
@given(old=lines, new=lines, context=st.integers(min_value=0, max_value=3))
def test_every_new_piece_of_a_few_lines_is_in_a_window(
    old: list[str], new: list[str], context: int
) -> None:
    old_text, new_text = "\n".join(old), "\n".join(new)
    windows = changed_windows(old_text, new_text, context)
    for start in range(len(new)):
        for end in range(start + 1, min(len(new), start + context + 1) + 1):
            piece = "\n".join(new[start:end])
            if piece not in old_text:
                assert any(piece in window for window in windows), (start, end)


def test_an_unchanged_text_has_nothing_to_scan() -> None:
    text = "\n".join(f"line {n}" for n in range(100))
    assert changed_windows(text, text, 3) == []


def test_windows_hold_the_changed_lines_and_their_context() -> None:
    old = [f"line {n}" for n in range(100)]
    new = [*old[:10], "inserted", *old[10:50], *old[60:]]
    windows = changed_windows("\n".join(old), "\n".join(new), 2)
    assert windows == [
        "line 8\nline 9\ninserted\nline 10\nline 11",
        "line 47\nline 48\nline 49\nline 60\nline 61\nline 62",
    ]


def big_index(count: int) -> str:
    return "".join(f"- [people/p-{n}](p-{n}/summary.md) — Person {n}: gist\n" for n in range(count))


def test_a_large_rewritten_file_is_scanned_where_it_changed(tmp_path: Path) -> None:
    text = big_index(2000)
    assert len(text) > 64 * 1024
    root = seeded_store(tmp_path / "store", {"life/index.md": text})
    scanned: list[str] = []

    def scanner(part: str) -> list[str]:
        scanned.append(part)
        return fake_scanner(part)

    unit = unit_for(root)
    old = unit.read_text("life/index.md")
    assert old is not None
    unit.write_text("life/index.md", old.replace("Person 700: gist", "Person 700: new gist"))
    assert unit.apply_and_commit("update", {}, scanner=scanner) is not None
    assert sum(map(len, scanned)) < len(text) // 10
    assert any("Person 700: new gist" in part for part in scanned)

    # A secret in a new line is found and the file withheld, as by a scan of the whole.
    unit = unit_for(root)
    old = unit.read_text("life/index.md")
    assert old is not None
    unit.write_text("life/index.md", old.replace("Person 900: gist", f"Person 900: {SECRET}"))
    unit.apply_and_commit("update", {}, scanner=fake_scanner)
    assert [w.path for w in unit.withheld] == ["life/index.md"]


def test_a_large_file_with_someones_uncommitted_edit_is_scanned_whole(tmp_path: Path) -> None:
    root = seeded_store(tmp_path / "store", {"life/index.md": big_index(2000)})
    # A person's edit, left uncommitted (withheld for its secret), far from memoryd's change.
    edited = (root / "life/index.md").read_text().replace("Person 5: gist", f"Person 5: {SECRET}")
    (root / "life/index.md").write_text(edited)
    unit = unit_for(root)
    old = unit.read_text("life/index.md")
    assert old is not None
    unit.write_text("life/index.md", old.replace("Person 1900: gist", "Person 1900: other"))

    assert unit.apply_and_commit("update", {}, scanner=fake_scanner) is None

    assert [w.path for w in unit.withheld] == ["life/index.md"]
    assert "life/index.md" in git(root, "status", "--porcelain")
    assert committed(root) == ["life/index.md"]  # the seed commit only
