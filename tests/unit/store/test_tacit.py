"""The tacit file: a header, appended bullets, no duplicates, a person's text kept."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memoryd.store.tacit import HEADER, add_tacit

from .conftest import DirTransaction, MemoryTransaction


def test_a_new_tacit_file_has_the_header_and_bullets(tx: DirTransaction, store_root: Path) -> None:
    added = add_tacit(
        tx, "MEMORY.md", ["Prefers terse bullet summaries", "- Works late\non Fridays"]
    )
    assert added == ["Prefers terse bullet summaries", "Works late on Fridays"]
    assert (store_root / "MEMORY.md").read_text() == (
        HEADER + "\n- Prefers terse bullet summaries\n- Works late on Fridays\n"
    )


def test_duplicates_are_skipped_by_normalized_comparison(
    tx: DirTransaction, store_root: Path
) -> None:
    add_tacit(tx, "MEMORY.md", ["Prefers terse bullet summaries"])
    writes = len(tx.written)
    assert (
        add_tacit(
            tx,
            "MEMORY.md",
            ["prefers  TERSE bullet summaries.", "* Prefers terse bullet summaries"],
        )
        == []
    )
    assert len(tx.written) == writes
    assert add_tacit(tx, "MEMORY.md", ["Hates meetings", "hates meetings!"]) == ["Hates meetings"]
    assert (store_root / "MEMORY.md").read_text().count("eetings") == 1


def test_a_hand_written_file_is_kept_and_gets_the_header(
    tx: DirTransaction, store_root: Path
) -> None:
    (store_root / "notes").mkdir()
    path = store_root / "notes/TACIT.md"
    path.write_text("Some thoughts of mine.\n* Likes tea")
    add_tacit(tx, "notes/TACIT.md", ["Likes tea", "Drinks no coffee"])
    assert path.read_text() == (
        HEADER + "\nSome thoughts of mine.\n* Likes tea\n- Drinks no coffee\n"
    )


def test_nothing_is_written_for_empty_or_punctuation_only_lines(
    tx: DirTransaction, store_root: Path
) -> None:
    assert add_tacit(tx, "MEMORY.md", ["", "  ", "-", "..."]) == []
    assert not (store_root / "MEMORY.md").exists()


@given(st.lists(st.text(max_size=20), max_size=10))
def test_adding_everything_twice_adds_nothing_the_second_time(lines: list[str]) -> None:
    tx = MemoryTransaction()
    add_tacit(tx, "MEMORY.md", lines)
    snapshot = dict(tx.files)
    assert add_tacit(tx, "MEMORY.md", lines) == []
    assert tx.files == snapshot
