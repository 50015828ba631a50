"""Facts: the exact items.json format, ids, dedup, supersession, access bumps, corrupt files."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import CorruptFileError, StoreError
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import Entity
from memoryd.store.facts import FactBook, FactDraft, FactFile, FactSource, InvalidFactError
from memoryd.store.items import parse_items, render_items, split_fact_id
from memoryd.store.text import normalize_statement, words

from .conftest import TODAY, DirTransaction, MemoryTransaction

SOURCE = FactSource("chief-of-staff", "sess-1", "/t/a.jsonl", (120, 164))


def draft(text: str, **changes: object) -> FactDraft:
    base = FactDraft(
        fact=text,
        category="milestone",
        timestamp=date(2025, 3, 15),
        conversation_date=date(2026, 1, 18),
        source=SOURCE,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture
def jane(catalog: EntityCatalog) -> Entity:
    return catalog.create("Jane Doe", "person", today=TODAY)


def test_items_json_has_the_exact_design_format(
    tx: DirTransaction, jane: Entity, store_root: Path
) -> None:
    facts = FactFile(tx, jane)
    facts.add(
        draft("Joined Acme as CTO in März 2025", related_entities=["companies/acme"]),
        recorded_at=date(2026, 1, 20),
    )
    assert facts.save()

    assert (store_root / jane.items_path).read_text(encoding="utf-8") == (
        "[\n"
        "  {\n"
        '    "id": "jane-doe-001",\n'
        '    "fact": "Joined Acme as CTO in März 2025",\n'
        '    "category": "milestone",\n'
        '    "timestamp": "2025-03-15",\n'
        '    "status": "active",\n'
        '    "supersededBy": null,\n'
        '    "relatedEntities": [\n'
        '      "companies/acme"\n'
        "    ],\n"
        '    "lastAccessed": "2026-01-20",\n'
        '    "accessCount": 0,\n'
        '    "recordedAt": "2026-01-20",\n'
        '    "source": {\n'
        '      "agent": "chief-of-staff",\n'
        '      "session": "sess-1",\n'
        '      "file": "/t/a.jsonl",\n'
        '      "lines": [\n'
        "        120,\n"
        "        164\n"
        "      ]\n"
        "    }\n"
        "  }\n"
        "]\n"
    )


def test_ids_count_up_with_at_least_three_digits_and_sort_numerically(
    jane: Entity,
) -> None:
    tx = MemoryTransaction()
    facts = FactFile(tx, jane)
    ids = [facts.add(draft(f"fact {n}"), recorded_at=TODAY).fact.id for n in range(1, 1002)]
    assert ids[0] == "jane-doe-001"
    assert ids[998] == "jane-doe-999"
    assert ids[999] == "jane-doe-1000"
    facts.save()
    stored = [item["id"] for item in json.loads(tx.files[jane.items_path])]
    assert stored == ids
    assert stored[-3:] == ["jane-doe-999", "jane-doe-1000", "jane-doe-1001"]


def test_the_next_id_follows_the_highest_even_with_gaps(tx: DirTransaction, jane: Entity) -> None:
    facts = FactFile(tx, jane)
    for text in ("a", "b", "c"):
        facts.add(draft(text), recorded_at=TODAY)
    facts.save()
    # A person deleted fact 002 by hand; its id must still never come back.
    path = tx.root / jane.items_path
    items = [item for item in json.loads(path.read_text()) if item["id"] != "jane-doe-002"]
    path.write_text(json.dumps(items))
    reopened = FactFile(tx, jane)
    assert reopened.add(draft("d"), recorded_at=TODAY).fact.id == "jane-doe-004"


def test_the_same_statement_is_stored_once_per_entity(
    tx: DirTransaction, catalog: EntityCatalog, jane: Entity
) -> None:
    facts = FactFile(tx, jane)
    first = facts.add(draft("Joined Acme as CTO."), recorded_at=TODAY)
    again = facts.add(draft("  joined ACME as   cto "), recorded_at=date(2026, 2, 1))
    assert first.added
    assert not again.added
    assert again.fact == first.fact
    assert len(facts.facts()) == 1
    # Punctuation inside the text still counts.
    assert facts.add(draft("Uses C++"), recorded_at=TODAY).added
    assert facts.add(draft("Uses C"), recorded_at=TODAY).added
    # Another entity may hold the same statement.
    acme = catalog.create("Acme", "company", today=TODAY)
    assert FactFile(tx, acme).add(draft("Joined Acme as CTO."), recorded_at=TODAY).added


def test_supersession_targets_only_active_facts_of_the_same_entity(
    tx: DirTransaction, catalog: EntityCatalog, jane: Entity
) -> None:
    acme = catalog.create("Acme", "company", today=TODAY)
    acme_facts = FactFile(tx, acme)
    acme_fact = acme_facts.add(draft("Based in Berlin"), recorded_at=TODAY).fact
    acme_facts.save()

    facts = FactFile(tx, jane)
    old = facts.add(draft("Works at Acme"), recorded_at=TODAY).fact
    new = facts.add(
        draft(
            "Works at Beta",
            supersedes=[old.id, acme_fact.id, "jane-doe-999", "nonsense", old.id],
        ),
        recorded_at=TODAY,
    )

    assert new.supersession.superseded == (old.id,)
    assert new.supersession.refused == (acme_fact.id, "jane-doe-999", "nonsense")
    stored_old = facts.get(old.id)
    assert stored_old is not None
    assert (stored_old.status, stored_old.superseded_by) == ("superseded", new.fact.id)
    assert [f.id for f in facts.active()] == [new.fact.id]
    facts.save()
    untouched = FactFile(tx, acme).get(acme_fact.id)
    assert untouched is not None
    assert untouched.status == "active"

    # An already superseded fact is not superseded again; the chain keeps its first link.
    third = facts.add(draft("Works at Gamma", supersedes=[old.id]), recorded_at=TODAY)
    assert third.supersession.refused == (old.id,)
    assert facts.get(old.id) == stored_old


def test_a_fact_cannot_supersede_itself(tx: DirTransaction, jane: Entity) -> None:
    facts = FactFile(tx, jane)
    kept = facts.add(draft("Lives in Paris"), recorded_at=TODAY).fact
    outcome = facts.add(draft("lives in paris", supersedes=[kept.id]), recorded_at=TODAY)
    assert outcome.supersession.refused == (kept.id,)
    assert facts.get(kept.id) == kept
    with pytest.raises(StoreError):
        facts.supersede([kept.id], "jane-doe-404")


def test_an_older_fact_filed_late_never_replaces_a_newer_one_it_names(
    tx: DirTransaction, jane: Entity
) -> None:
    facts = FactFile(tx, jane)
    junior = facts.add(draft("Analyst", timestamp=date(2025, 1, 1)), recorded_at=TODAY).fact
    vp = facts.add(draft("VP of Data", timestamp=date(2025, 6, 1)), recorded_at=TODAY).fact
    # An older conversation, filed after the newer one, says its role replaced both.
    late = facts.add(
        draft("Head of Data", timestamp=date(2025, 3, 1), supersedes=[vp.id, junior.id]),
        recorded_at=TODAY,
    )

    assert late.added
    assert late.fact.status == "superseded"
    assert late.fact.superseded_by == vp.id
    assert facts.get(vp.id) == vp  # the newer truth stays the active one
    older = facts.get(junior.id)
    assert older is not None
    assert (older.status, older.superseded_by) == ("superseded", late.fact.id)
    assert set(late.supersession.superseded) == {junior.id, late.fact.id}
    assert [fact.fact for fact in facts.active()] == ["VP of Data"]


def test_restating_a_superseded_fact_revives_it_only_when_it_replaces_an_active_one(
    tx: DirTransaction, jane: Entity
) -> None:
    facts = FactFile(tx, jane)
    acme = facts.add(draft("Works at Acme"), recorded_at=TODAY).fact
    beta = facts.add(draft("Works at Beta", supersedes=[acme.id]), recorded_at=TODAY).fact

    plain = facts.add(draft("Works at Acme"), recorded_at=TODAY)
    assert not plain.added
    assert plain.fact.status == "superseded"

    revived = facts.add(draft("works at acme", supersedes=[beta.id]), recorded_at=TODAY)
    assert not revived.added
    assert revived.fact.id == acme.id
    assert (revived.fact.status, revived.fact.superseded_by) == ("active", None)
    assert revived.supersession.superseded == (beta.id,)
    assert len(facts.facts()) == 2


def test_access_bumps_count_and_only_move_last_accessed_forward(
    tx: DirTransaction, jane: Entity
) -> None:
    facts = FactFile(tx, jane)
    fact = facts.add(draft("Likes tea"), recorded_at=date(2026, 1, 18)).fact
    assert (fact.last_accessed, fact.access_count) == (date(2026, 1, 18), 0)

    later = facts.bump(fact.id, date(2026, 1, 25))
    earlier = facts.bump(fact.id, date(2025, 12, 1))
    assert later is not None
    assert earlier is not None
    assert (later.last_accessed, later.access_count) == (date(2026, 1, 25), 1)
    assert (earlier.last_accessed, earlier.access_count) == (date(2026, 1, 25), 2)
    assert facts.bump("jane-doe-777", date(2026, 1, 25)) is None


def test_a_new_fact_is_last_accessed_when_filed_and_keeps_its_conversation_date(
    tx: DirTransaction, jane: Entity
) -> None:
    facts = FactFile(tx, jane)
    # Backfilled: a conversation of months ago filed today starts as used today.
    old = facts.add(
        draft("Likes tea", timestamp=date(2025, 9, 2), conversation_date=date(2025, 9, 2)),
        recorded_at=date(2026, 1, 20),
    ).fact
    assert (old.timestamp, old.last_accessed, old.recorded_at) == (
        date(2025, 9, 2),
        date(2026, 1, 20),
        date(2026, 1, 20),
    )
    assert old.access_count == 0
    # A conversation dated after the filing day (a clock or time-zone skew) keeps its own date.
    ahead = facts.add(
        draft("Likes coffee", conversation_date=date(2026, 1, 21)), recorded_at=date(2026, 1, 20)
    ).fact
    assert ahead.last_accessed == date(2026, 1, 21)


def test_invalid_drafts_are_refused(tx: DirTransaction, jane: Entity) -> None:
    facts = FactFile(tx, jane)
    with pytest.raises(InvalidFactError, match="empty"):
        facts.add(draft(" \n "), recorded_at=TODAY)
    with pytest.raises(InvalidFactError, match="category"):
        facts.add(draft("x", category="gossip"), recorded_at=TODAY)
    assert not facts.changed


def test_nothing_is_written_when_nothing_changed(tx: DirTransaction, jane: Entity) -> None:
    writes = len(tx.written)
    assert not FactFile(tx, jane).save()
    assert len(tx.written) == writes


CORRUPT = [
    "{not json",
    '{"id": "x"}',
    "[1, 2]",
    '[{"id": "jane-doe-001"}]',
    "",
]


@pytest.mark.parametrize("content", CORRUPT)
def test_a_corrupt_items_json_is_reported_with_its_path_and_never_overwritten(
    tx: DirTransaction, jane: Entity, content: str
) -> None:
    path = tx.root / jane.items_path
    path.write_text(content)
    with pytest.raises(CorruptFileError) as caught:
        FactFile(tx, jane)
    assert caught.value.path == tx.root / jane.items_path
    assert str(tx.root / jane.items_path) in str(caught.value)
    assert path.read_text() == content


def test_wrong_field_types_and_duplicate_ids_are_corrupt(tx: DirTransaction, jane: Entity) -> None:
    facts = FactFile(tx, jane)
    facts.add(draft("a"), recorded_at=TODAY)
    facts.save()
    path = tx.root / jane.items_path
    good = json.loads(path.read_text())
    for broken in (
        [{**good[0], "accessCount": "12"}],
        [{**good[0], "accessCount": True}],
        [{**good[0], "timestamp": "March 2025"}],
        [{**good[0], "status": "deleted"}],
        [{**good[0], "source": {**good[0]["source"], "lines": [1]}}],
        [good[0], good[0]],
    ):
        path.write_text(json.dumps(broken))
        with pytest.raises(CorruptFileError):
            FactFile(tx, jane)


def test_unknown_keys_of_a_fact_are_kept(tx: DirTransaction, jane: Entity) -> None:
    facts = FactFile(tx, jane)
    facts.add(draft("a"), recorded_at=TODAY)
    facts.save()
    path = tx.root / jane.items_path
    items = json.loads(path.read_text())
    items[0]["note"] = "checked by hand"
    path.write_text(json.dumps(items))

    reopened = FactFile(tx, jane)
    reopened.bump("jane-doe-001", date(2026, 2, 1))
    reopened.save()
    saved = json.loads(path.read_text())[0]
    assert saved["note"] == "checked by hand"
    assert list(saved)[-1] == "note"


def test_the_fact_book_finds_facts_store_wide_and_follows_archiving(
    tx: DirTransaction, catalog: EntityCatalog
) -> None:
    acme = catalog.create("Acme", "company", today=TODAY)
    launch = catalog.create("Launch", "project", today=TODAY)
    book = FactBook(tx, catalog)
    acme_fact = book.file_for(acme).add(draft("Based in Berlin"), recorded_at=TODAY).fact
    launch_fact = book.file_for(launch).add(draft("Due in March"), recorded_at=TODAY).fact
    book.save_all()

    catalog.set_status(launch, "completed")
    book = FactBook(tx, catalog)
    assert book.bump(acme_fact.id, date(2026, 2, 1)) is not None
    bumped = book.bump(launch_fact.id, date(2026, 2, 1))
    assert bumped is not None
    assert bumped.access_count == 1
    assert book.lookup_fact("acme-999") is None
    assert book.lookup_fact("nobody-001") is None
    assert book.lookup_fact("not an id") is None
    assert book.save_all() == [
        "life/areas/companies/acme/items.json",
        "life/archives/projects/launch/items.json",
    ]
    archived_items = json.loads((tx.root / "life/archives/projects/launch/items.json").read_text())
    assert archived_items[0]["accessCount"] == 1


def test_a_file_opened_before_a_move_is_saved_at_the_new_place(
    tx: DirTransaction, catalog: EntityCatalog
) -> None:
    launch = catalog.create("Launch", "project", today=TODAY)
    book = FactBook(tx, catalog)
    book.file_for(launch).add(draft("Due in March"), recorded_at=TODAY)
    catalog.set_status(launch, "completed")
    assert book.save_all() == ["life/archives/projects/launch/items.json"]
    assert not (tx.root / "life/projects/launch").exists()


@given(st.text(alphabet="abc-0123456789", max_size=20))
def test_split_fact_id_round_trips(candidate: str) -> None:
    parts = split_fact_id(candidate)
    if parts is not None:
        slug, number = parts
        assert candidate.startswith(slug + "-")
        assert int(candidate.rsplit("-", 1)[1]) == number


@given(st.lists(st.text(min_size=1, max_size=30), max_size=12))
def test_rendering_is_deterministic_and_round_trips(texts: list[str]) -> None:
    tx = MemoryTransaction()
    entity = EntityCatalog(tx).create("Jane", "person", today=TODAY)
    facts = FactFile(tx, entity)
    for text in texts:
        try:
            facts.add(draft(text), recorded_at=TODAY)
        except InvalidFactError:
            continue
    rendered = render_items(facts.facts())
    parsed = parse_items(Path("items.json"), rendered)
    assert render_items(reversed(parsed)) == rendered
    kept = [t for t in texts if words(t)]
    assert len(parsed) == len({normalize_statement(t) for t in kept})


def test_a_file_fetched_again_after_a_move_saves_at_the_new_place(
    tx: DirTransaction, catalog: EntityCatalog
) -> None:
    launch = catalog.create("Launch", "project", today=TODAY)
    book = FactBook(tx, catalog)
    book.file_for(launch).add(draft("Due in March"), recorded_at=TODAY)
    catalog.set_status(launch, "completed")
    assert book.file_for(launch).save()
    assert not (tx.root / "life/projects/launch").exists()
    saved = json.loads((tx.root / "life/archives/projects/launch/items.json").read_text())
    assert [item["fact"] for item in saved] == ["Due in March"]


STATEMENTS = ("a", "b", "c", "A.", "d")
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["add", "bump", "reopen"]),
        st.integers(min_value=0, max_value=8),
        st.lists(st.integers(min_value=1, max_value=8), max_size=2),
    ),
    max_size=25,
)


@given(OPERATIONS)
def test_fact_invariants_hold_under_any_sequence_of_operations(
    operations: list[tuple[str, int, list[int]]],
) -> None:
    tx = MemoryTransaction()
    entity = EntityCatalog(tx).create("Jane", "person", today=TODAY)
    facts = FactFile(tx, entity)
    seen_ids: list[str] = []
    for operation, argument, targets in operations:
        if operation == "add":
            supersedes = [f"jane-{n:03d}" for n in targets]
            text = STATEMENTS[argument % len(STATEMENTS)]
            outcome = facts.add(draft(text, supersedes=supersedes), recorded_at=TODAY)
            if outcome.added:
                seen_ids.append(outcome.fact.id)
        elif operation == "bump":
            facts.bump(f"jane-{argument:03d}", date(2026, 2, 1))
        else:
            facts.save()
            facts = FactFile(tx, entity)
        current = {fact.id: fact for fact in facts.facts()}
        # Never deleted, never reused, numbered in order of creation.
        assert list(current) == seen_ids
        assert seen_ids == [f"jane-{n:03d}" for n in range(1, len(seen_ids) + 1)]
        # One fact per statement.
        statements = [normalize_statement(fact.fact) for fact in current.values()]
        assert len(set(statements)) == len(statements)
        # Supersession links point at facts of this entity, and only superseded facts have one.
        for fact in current.values():
            assert (fact.status == "superseded") == (fact.superseded_by is not None)
            if fact.superseded_by is not None:
                assert fact.superseded_by in current
                assert fact.superseded_by != fact.id


def test_an_id_ending_in_a_newline_is_not_a_fact_id() -> None:
    assert split_fact_id("acme-001\n") is None
    assert split_fact_id("acme-001") == ("acme", 1)
