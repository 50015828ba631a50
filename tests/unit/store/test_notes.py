"""Daily notes: readable header, timeline ordered by time, idempotent appends, pending facts."""

from __future__ import annotations

from datetime import date, time
from pathlib import Path
from random import Random

from hypothesis import given
from hypothesis import strategies as st

from memoryd.store.notes import (
    PendingNote,
    TimelineEntry,
    add_pending_facts,
    add_timeline,
    note_path,
)

from .conftest import DirTransaction, MemoryTransaction

DAY = date(2026, 1, 20)


def test_a_new_note_has_a_header_and_a_timeline_ordered_by_time(
    tx: DirTransaction, store_root: Path
) -> None:
    added = add_timeline(
        tx,
        DAY,
        [
            TimelineEntry(time(14, 5), "chief-of-staff", "Moved the launch to March"),
            TimelineEntry(time(9, 30), "researcher", "Read the\nquarterly report"),
        ],
    )
    assert added == 2
    assert note_path(DAY) == "memory/2026-01-20.md"
    assert (store_root / "memory/2026-01-20.md").read_text() == (
        "# 2026-01-20 (Tuesday)\n"
        "\n"
        "Daily note filed by memoryd from the agents' conversations.\n"
        "\n"
        "## Timeline\n"
        "\n"
        "What the agents did and heard, by local time.\n"
        "\n"
        "- 09:30 · researcher · Read the quarterly report\n"
        "- 14:05 · chief-of-staff · Moved the launch to March\n"
    )


def test_the_same_entry_twice_is_stored_once(tx: DirTransaction, store_root: Path) -> None:
    entry = TimelineEntry(time(14, 5), "chief-of-staff", "Moved the launch to March")
    add_timeline(tx, DAY, [entry, entry])
    before = (store_root / note_path(DAY)).read_text()
    writes = len(tx.written)

    again = TimelineEntry(time(14, 5), "chief-of-staff", "moved the launch to  March.")
    assert add_timeline(tx, DAY, [again]) == 0
    assert (store_root / note_path(DAY)).read_text() == before
    assert len(tx.written) == writes
    assert before.count("Moved the launch") == 1


def test_later_entries_are_merged_in_time_order(tx: DirTransaction, store_root: Path) -> None:
    add_timeline(tx, DAY, [TimelineEntry(time(15, 0), "a", "late")])
    add_timeline(tx, DAY, [TimelineEntry(time(8, 0), "a", "early")])
    add_timeline(tx, DAY, [TimelineEntry(time(12, 0), "b", "noon")])
    lines = (store_root / note_path(DAY)).read_text().splitlines()
    bullets = [line for line in lines if line.startswith("- ")]
    assert bullets == ["- 08:00 · a · early", "- 12:00 · b · noon", "- 15:00 · a · late"]


def test_pending_facts_get_their_own_idempotent_section(
    tx: DirTransaction, store_root: Path
) -> None:
    add_timeline(tx, DAY, [TimelineEntry(time(10, 0), "a", "Call with Mia")])
    fact = PendingNote("Mia Wong", "person", "Runs the bakery on Elm St")
    assert add_pending_facts(tx, DAY, [fact]) == 1
    assert add_pending_facts(tx, DAY, [fact]) == 0
    assert add_timeline(tx, DAY, [TimelineEntry(time(11, 0), "a", "Lunch")]) == 1

    text = (store_root / note_path(DAY)).read_text()
    assert text.count("Runs the bakery") == 1
    assert text.index("## Timeline") < text.index("## Pending facts")
    assert "- **Mia Wong** (person): Runs the bakery on Elm St\n" in text
    assert "- 11:00 · a · Lunch\n" in text


def test_what_a_person_added_to_the_note_is_kept(tx: DirTransaction, store_root: Path) -> None:
    path = store_root / note_path(DAY)
    path.parent.mkdir()
    path.write_text(
        "# My own day title\n\nNotes I wrote.\n\n## Timeline\n\nA remark of mine.\n\n"
        "- 10:00 · me · Coffee\n\n## Thoughts\n\nDeep ones.\n"
    )
    add_timeline(tx, DAY, [TimelineEntry(time(9, 0), "a", "Stand-up")])
    text = path.read_text()
    assert text.startswith("# My own day title\n\nNotes I wrote.\n")
    assert "A remark of mine." in text
    assert "## Thoughts\n\nDeep ones.\n" in text
    assert text.index("- 09:00 · a · Stand-up") < text.index("- 10:00 · me · Coffee")


def test_entries_without_text_are_skipped(tx: DirTransaction, store_root: Path) -> None:
    assert add_timeline(tx, DAY, [TimelineEntry(time(9, 0), "a", " \n ")]) == 0
    assert not (store_root / note_path(DAY)).exists()


ENTRIES = st.lists(
    st.builds(
        TimelineEntry,
        st.times().map(lambda t: t.replace(second=0, microsecond=0)),
        st.sampled_from(["a", "b"]),
        # No case or trailing-punctuation variants: for those the first one filed is kept.
        st.text(alphabet="xyz ", min_size=1, max_size=8),
    ),
    max_size=8,
)


@given(ENTRIES, st.randoms())
def test_the_note_depends_on_the_set_of_entries_not_their_order(
    entries: list[TimelineEntry], random: Random
) -> None:
    shuffled = list(entries)
    random.shuffle(shuffled)
    one, other = MemoryTransaction(), MemoryTransaction()
    add_timeline(one, DAY, entries)
    for entry in shuffled:
        add_timeline(other, DAY, [entry])
    add_timeline(other, DAY, entries)  # everything again: nothing new
    assert one.files == other.files
