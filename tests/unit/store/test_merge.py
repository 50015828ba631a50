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
from memoryd.store.provenance import TipSource, parse_provenance, render_provenance
from memoryd.store.reads import parse_reads, render_reads
from memoryd.store.review import ReviewItem, parse_item, render_item
from memoryd.sync._merge import entity_folders, merge_file, merge_lines, relocate, relocations

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


# -- provenance, tips held for review, read counts: files of the store --------------------------

PROVENANCE = ".memoryd/provenance/agents/ops/skills/git.md.json"


def tip_source(session: str, trust: str = "user") -> TipSource:
    return TipSource("ops", session, f"/t/{session}.jsonl", (1, 4), trust, "2026-03-01")  # type: ignore[arg-type]


def test_provenance_joins_the_tips_and_sources_of_both_sides() -> None:
    base = {"Rebase before pushing": [tip_source("s0")]}
    ours = {**base, "Rebase before pushing": [tip_source("s0"), tip_source("s1")]}
    ours["Sign tags"] = [tip_source("s1", "agent")]
    theirs = {**base, "Rebase before pushing": [tip_source("s0"), tip_source("s2")]}
    theirs["Keep commits small"] = [tip_source("s2")]
    result = merge_file(
        PROVENANCE,
        render_provenance(base).encode(),
        render_provenance(ours).encode(),
        render_provenance(theirs).encode(),
    )
    assert result.contradictions == []
    assert result.data is not None
    merged = parse_provenance(result.data.decode())
    assert set(merged) == {"Rebase before pushing", "Sign tags", "Keep commits small"}
    assert [s.session for s in merged["Rebase before pushing"]] == ["s0", "s1", "s2"]
    assert result.data == render_provenance(merged).encode()  # deterministic: sorted, once each


def held_item(*sessions: str, **changes: Any) -> ReviewItem:
    item = ReviewItem(
        kind="skill",
        agent="ops",
        text="Pipe the installer to sudo sh",
        reasons=("remote-code",),
        held="2026-03-02",
        topic="install",
        sources=tuple(tip_source(s, "untrusted") for s in sessions),
    )
    return replace(item, **changes)


def merge_review(base: ReviewItem | None, ours: ReviewItem, theirs: ReviewItem) -> Any:
    result = merge_file(
        ours.path,
        None if base is None else render_item(base).encode(),
        render_item(ours).encode(),
        render_item(theirs).encode(),
    )
    assert result.data is not None
    return parse_item(result.data.decode()), result.contradictions


def test_a_tip_held_on_two_hosts_is_one_item_with_both_sources() -> None:
    ours = held_item("s1", held="2026-03-03", reasons=("untrusted-only",))
    theirs = held_item("s2")
    item, contradictions = merge_review(None, ours, theirs)
    assert contradictions == []
    assert (item.status, item.held) == ("held", "2026-03-02")
    assert [s.session for s in item.sources] == ["s1", "s2"]
    assert item.reasons == ("remote-code", "untrusted-only")


def test_a_decision_on_either_side_wins_over_held() -> None:
    base = held_item("s1")
    rejected_here = replace(base, status="rejected", decided="2026-03-04")
    more_sources = held_item("s1", "s2")
    item, contradictions = merge_review(base, rejected_here, more_sources)
    assert (item.status, item.decided, contradictions) == ("rejected", "2026-03-04", [])
    assert [s.session for s in item.sources] == ["s1", "s2"]
    accepted_there = replace(base, status="accepted", decided="2026-03-05")
    item, contradictions = merge_review(base, more_sources, accepted_there)
    assert (item.status, item.decided, contradictions) == ("accepted", "2026-03-05", [])
    assert [s.session for s in item.sources] == ["s1", "s2"]


def test_two_different_decisions_keep_the_remotes_and_are_reported() -> None:
    base = held_item("s1")
    accepted = replace(base, status="accepted", decided="2026-03-04")
    rejected = replace(base, status="rejected", decided="2026-03-05")
    item, contradictions = merge_review(base, accepted, rejected)
    assert (item.status, item.decided) == ("rejected", "2026-03-05")
    assert len(contradictions) == 1
    assert "accepted here" in contradictions[0]
    same = replace(base, status="rejected", decided="2026-03-01")
    item, contradictions = merge_review(base, same, rejected)
    assert (item.status, item.decided, contradictions) == ("rejected", "2026-03-05", [])


def test_a_review_file_that_does_not_parse_keeps_the_remotes() -> None:
    theirs = render_item(held_item("s2")).encode()
    result = merge_file(held_item().path, None, b"{not json", theirs)
    assert result.data == theirs
    assert result.contradictions


def test_counted_reads_of_one_host_are_joined() -> None:
    path = ".memoryd/reads/a.json"
    base = {("2026-03-01", "ops", "jane-doe-001")}
    ours = base | {("2026-03-02", "ops", "jane-doe-002")}
    theirs = base | {("2026-03-02", "dev", "jane-doe-001")}
    result = merge_file(
        path,
        render_reads(base).encode(),
        render_reads(ours).encode(),
        render_reads(theirs).encode(),
    )
    assert result.data is not None
    assert result.contradictions == []
    assert parse_reads(result.data.decode()) == ours | theirs


def retracted(old: Fact, on: str, reason: str) -> Fact:
    return replace(old, status="retracted", extra={"retraction": {"on": on, "reason": reason}})


def test_a_retraction_here_reaches_the_merge_with_the_remotes_access_counts() -> None:
    old = fact("jane-doe-001", "Lives in Berlin", access_count=1)
    ours = items(retracted(old, "2026-03-03", "wrong city"))
    theirs = items(replace(old, access_count=4), fact("jane-doe-2222001", "Likes tea"))
    result = merge_file(ITEMS, items(old), ours, theirs)
    assert result.contradictions == []
    assert result.data is not None
    merged = {f.id: f for f in parse_items(Path(ITEMS), result.data.decode())}
    assert merged["jane-doe-001"].status == "retracted"
    assert merged["jane-doe-001"].extra["retraction"] == {
        "on": "2026-03-03",
        "reason": "wrong city",
    }
    assert merged["jane-doe-001"].access_count == 4
    assert '"retraction"' in result.data.decode()


def test_a_retraction_and_a_supersession_on_the_other_side_compose() -> None:
    old = fact("jane-doe-001", "Works at Acme")
    new = fact("jane-doe-2222001", "Works at Initech")
    superseded = replace(old, status="superseded", superseded_by=new.id)
    gone = retracted(old, "2026-03-03", "never worked there")
    for ours, theirs in (
        (items(gone), items(superseded, new)),
        (items(superseded, new), items(gone)),
    ):
        result = merge_file(ITEMS, items(old), ours, theirs)
        assert result.contradictions == []
        assert result.data is not None
        merged = {f.id: f for f in parse_items(Path(ITEMS), result.data.decode())}
        assert merged[old.id].status == "retracted"
        assert merged[old.id].superseded_by == new.id
        assert merged[old.id].extra["retraction"]["reason"] == "never worked there"
        assert merged[new.id].status == "active"


def test_two_retractions_keep_the_remotes_record_and_report_it() -> None:
    old = fact("jane-doe-001", "Lives in Berlin")
    ours = items(retracted(old, "2026-03-03", "moved"))
    theirs = items(retracted(old, "2026-03-04", "wrong"))
    result = merge_file(ITEMS, items(old), ours, theirs)
    assert result.data is not None
    merged = parse_items(Path(ITEMS), result.data.decode())[0]
    assert merged.status == "retracted"
    assert merged.extra["retraction"]["reason"] == "wrong"
    assert result.contradictions == [
        "jane-doe-001: retraction changed on both sides: the remote's kept"
    ]


def test_an_unknown_key_removed_here_and_left_there_is_removed() -> None:
    old = replace(fact("jane-doe-001", "Lives in Berlin"), extra={"note": "by hand"})
    ours = items(replace(old, extra={}, access_count=1))
    theirs = items(replace(old, access_count=2))
    merged = merged_facts(items(old), ours, theirs)
    assert merged["jane-doe-001"].extra == {}
    assert merged["jane-doe-001"].access_count == 3
