"""Merging memoryd's files by meaning: facts by id, records by generation, text line by line."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memoryd.store.items import Fact, FactSource, parse_items, render_items
from memoryd.store.merge import entity_folders, merge_file, merge_lines, relocate, relocations

ITEMS = "life/areas/people/jane-doe/items.json"
SOURCE = FactSource("agent", "s", "/t/a.jsonl", (1, 2))


def fact(fact_id: str, text: str, **changes: Any) -> Fact:
    base = Fact(
        id=fact_id,
        fact=text,
        category="context",
        timestamp=date(2026, 1, 1),
        status="active",
        superseded_by=None,
        related_entities=(),
        last_accessed=date(2026, 1, 1),
        access_count=0,
        recorded_at=date(2026, 1, 1),
        source=SOURCE,
    )
    return replace(base, **changes)


def items(*facts: Fact) -> bytes:
    return render_items(facts).encode()


def merged_facts(base: bytes | None, ours: bytes, theirs: bytes) -> dict[str, Fact]:
    result = merge_file(ITEMS, base, ours, theirs)
    assert result.data is not None
    return {f.id: f for f in parse_items(Path(ITEMS), result.data.decode())}


def test_facts_added_on_both_sides_are_all_kept() -> None:
    old = fact("jane-doe-001", "Lives in Berlin")
    base = items(old)
    ours = items(old, fact("jane-doe-1111001", "Works at Acme"))
    theirs = items(old, fact("jane-doe-2222001", "Likes tea"))
    merged = merged_facts(base, ours, theirs)
    assert set(merged) == {"jane-doe-001", "jane-doe-1111001", "jane-doe-2222001"}


def test_supersession_and_access_merge_field_by_field() -> None:
    old = fact("jane-doe-001", "Works at Acme", access_count=2)
    new = fact("jane-doe-1111001", "Works at Initech")
    ours = items(replace(old, status="superseded", superseded_by=new.id, access_count=3), new)
    theirs = items(replace(old, access_count=5, last_accessed=date(2026, 2, 1)))
    merged = merged_facts(items(old), ours, theirs)
    assert merged["jane-doe-001"].status == "superseded"
    assert merged["jane-doe-001"].superseded_by == new.id
    assert merged["jane-doe-001"].access_count == 6  # 2 + 1 here + 3 there
    assert merged["jane-doe-001"].last_accessed == date(2026, 2, 1)


def test_a_persons_correction_wins_and_is_reported() -> None:
    old = fact("jane-doe-001", "Works at Acme")
    ours = items(replace(old, access_count=1, fact="Works at ACME Corp"))
    theirs = items(replace(old, fact="Works at Acme Inc. (corrected by hand)"))
    result = merge_file(ITEMS, items(old), ours, theirs)
    assert result.contradictions
    assert result.data is not None
    assert "corrected by hand" in result.data.decode()
    assert '"accessCount": 1' in result.data.decode()


def test_the_same_statement_from_two_hosts_is_stored_once() -> None:
    twin_here = fact("jane-doe-1111001", "Likes green tea")
    twin_there = fact("jane-doe-2222001", "likes green tea.")
    replacing = fact("jane-doe-1111002", "Likes coffee now")
    ours = items(replace(twin_here, status="superseded", superseded_by=replacing.id), replacing)
    merged = merged_facts(None, ours, items(twin_there))
    assert set(merged) == {"jane-doe-2222001", "jane-doe-1111002"}


def test_one_id_given_to_two_facts_is_renumbered_here() -> None:
    ours = items(fact("jane-doe-001", "Works at Acme"))
    theirs = items(fact("jane-doe-001", "Lives in Paris"))
    result = merge_file(ITEMS, None, ours, theirs)
    assert result.data is not None
    facts = json.loads(result.data)
    assert {f["id"]: f["fact"] for f in facts} == {
        "jane-doe-001": "Lives in Paris",
        "jane-doe-002": "Works at Acme",
    }
    assert result.contradictions


def test_text_files_keep_every_line_either_side_added() -> None:
    base = ["# Day\n", "\n", "## Timeline\n", "\n", "- 09:00 a\n"]
    ours = [*base, "- 10:00 ours\n"]
    theirs = [*base, "- 11:00 theirs\n"]
    merged, lost = merge_lines(base, ours, theirs)
    assert merged == [*base, "- 11:00 theirs\n", "- 10:00 ours\n"]
    assert lost == 0
    # Far apart changes both apply; a line removed here but kept there stays (theirs wins).
    merged, lost = merge_lines(
        ["a\n", "b\n", "c\n", "d\n"], ["a\n", "c\n", "d\n", "e\n"], ["A\n", "b\n", "c\n", "d\n"]
    )
    assert merged == ["A\n", "c\n", "d\n", "e\n"]


def test_host_records_take_the_later_generation_and_the_index_the_remote() -> None:
    def record(generation: int) -> bytes:
        return json.dumps({"generation": generation}).encode()

    path = ".memoryd/hosts/a.json"
    assert merge_file(path, record(1), record(3), record(2)).data == record(3)
    assert merge_file("life/index.md", b"x\n", b"y\n", b"z\n").data == b"z\n"
    assert merge_file("MEMORY.md", b"", b"- a\n", b"- b\n").data == b"- b\n- a\n"
    assert merge_file(None, b"1", b"2", b"3").data == b"3"  # outside the store: the remote's
    unchanged = merge_file(ITEMS, b"same", b"same", b"other")
    assert unchanged.data == b"other" and not unchanged.contradictions


def test_an_entity_archived_there_and_changed_here_is_merged_in_the_archive() -> None:
    active = "life/projects/launch"
    archived = "life/archives/projects/launch"
    base = entity_folders([f"{active}/items.json", f"{active}/summary.md"])
    ours = entity_folders([f"{active}/items.json"])
    theirs = entity_folders([f"{archived}/items.json"])
    target = relocations(base, ours, theirs)
    assert target == {"launch": archived}
    assert relocate(f"{active}/items.json", ours, target) == f"{archived}/items.json"
    assert relocate("memory/2026-01-01.md", ours, target) == "memory/2026-01-01.md"


def test_a_corrupt_side_keeps_the_remotes_file() -> None:
    result = merge_file(ITEMS, None, b"[not json", items(fact("jane-doe-001", "x")))
    assert result.contradictions
    assert result.data == items(fact("jane-doe-001", "x"))


def test_a_daily_note_keeps_its_timeline_in_order_and_each_line_once() -> None:
    header = (
        "# 2026-03-02 (Monday)\n\nDaily note filed by memoryd from the agents' conversations.\n"
    )
    intro = "What the agents did and heard, by local time."

    def note(*lines: str) -> bytes:
        return (header + f"\n## Timeline\n\n{intro}\n\n" + "".join(lines)).encode()

    base = note("- 09:00 · ops · start\n")
    ours = note("- 09:00 · ops · start\n", "- 10:00 · ops · here\n", "- 12:00 · ops · both\n")
    theirs = note("- 09:00 · ops · start\n", "- 11:00 · ops · there\n", "- 12:00 · ops · both\n")
    merged = merge_file("memory/2026-03-02.md", base, ours, theirs)
    assert merged.data == note(
        "- 09:00 · ops · start\n",
        "- 10:00 · ops · here\n",
        "- 11:00 · ops · there\n",
        "- 12:00 · ops · both\n",
    )
    # A hand edit committed here (not a bullet of memoryd's sections) is merged line by line.
    edited = ours + b"\nA hand-written remark\n"
    fallback = merge_file("memory/2026-03-02.md", base, edited, theirs)
    assert fallback.data is not None and b"A hand-written remark" in fallback.data
    assert b"- 11:00 \xc2\xb7 ops \xc2\xb7 there" in fallback.data


def test_entity_metadata_merges_key_by_key_and_joins_aliases() -> None:
    def meta(**fields: Any) -> bytes:
        return json.dumps(
            {"name": "Jane Doe", "aliases": [], "status": "active", **fields}
        ).encode()

    path = "life/areas/people/jane-doe/entity.json"
    merged = merge_file(path, meta(), meta(aliases=["Jane"]), meta(aliases=["JD"], note="x"))
    assert merged.data is not None
    document = json.loads(merged.data)
    assert document["aliases"] == ["JD", "Jane"] and document["note"] == "x"
    clash = merge_file(path, meta(), meta(status="completed"), meta(status="inactive"))
    assert clash.contradictions and clash.data is not None
    assert json.loads(clash.data)["status"] == "inactive"


def test_removals_keep_the_persons_side() -> None:
    assert merge_file("MEMORY.md", b"a\n", None, b"b\n").data == b"b\n"
    removed_there = merge_file("MEMORY.md", b"a\n", b"a\nb\n", None)
    assert removed_there.data is None and removed_there.contradictions
    old = fact("jane-doe-001", "Works at Acme")
    result = merged_facts(items(old), items(replace(old, access_count=4)), items())
    assert result == {}  # the person removed the fact: it stays removed (reported)
    assert merge_file("notes.txt", b"a", b"b", b"c").data == b"c"
    assert merge_file(".memoryd-format", b"1\n", b"2\n", b"3\n").data == b"3\n"
    assert merge_file("life/projects/x/summary.md", b"a", b"b", b"c").contradictions


@given(
    st.lists(st.integers(0, 30), max_size=12, unique=True),
    st.lists(
        st.tuples(st.integers(0, 12), st.integers(100, 130)), max_size=5, unique_by=lambda t: t[1]
    ),
    st.lists(
        st.tuples(st.integers(0, 12), st.integers(200, 230)), max_size=5, unique_by=lambda t: t[1]
    ),
    st.sets(st.integers(0, 30)),
)
def test_every_line_either_side_added_is_kept(
    base_numbers: list[int],
    ours_inserts: list[tuple[int, int]],
    theirs_inserts: list[tuple[int, int]],
    theirs_removed: set[int],
) -> None:
    base = [f"{n}\n" for n in base_numbers]

    def with_inserts(lines: list[str], inserts: list[tuple[int, int]]) -> list[str]:
        result = list(lines)
        for position, number in inserts:
            result.insert(min(position, len(result)), f"{number}\n")
        return result

    ours = with_inserts(base, ours_inserts)
    theirs = with_inserts(
        [line for line in base if int(line) not in theirs_removed], theirs_inserts
    )
    merged, _lost = merge_lines(base, ours, theirs)
    for line in ours + theirs:
        if line not in base:
            assert merged.count(line) == 1
    for line in base:  # a line the remote removed stays removed
        if int(line) in theirs_removed:
            assert line not in merged
