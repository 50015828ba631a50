"""Entities: creation, one slug namespace, resolution, lifecycle moves, mentions."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import CorruptFileError, StoreError
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import InvalidEntityError, normalize_name

from .conftest import TODAY, DirTransaction, MemoryTransaction

SLUG_SHAPE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def test_create_writes_metadata_empty_facts_and_a_placeholder_summary(
    tx: DirTransaction, catalog: EntityCatalog, store_root: Path
) -> None:
    jane = catalog.create("Jane Doe", "person", ["Jane", "JD", "Jane"], today=TODAY)

    assert jane.ref == "people/jane-doe"
    folder = store_root / "life/areas/people/jane-doe"
    assert (folder / "items.json").read_text() == "[]\n"
    assert (folder / "summary.md").read_text() == "# Jane Doe\n"
    assert (folder / "entity.json").read_text() == (
        "{\n"
        '  "aliases": [\n    "JD",\n    "Jane"\n  ],\n'
        '  "created": "2026-01-20",\n'
        '  "kind": "person",\n'
        '  "name": "Jane Doe",\n'
        '  "status": "active"\n'
        "}\n"
    )


@pytest.mark.parametrize(
    ("kind", "folder"),
    [
        ("person", "life/areas/people/x"),
        ("company", "life/areas/companies/x"),
        ("project", "life/projects/x"),
        ("area", "life/areas/x"),
        ("resource", "life/resources/x"),
    ],
)
def test_each_kind_has_its_folder(catalog: EntityCatalog, kind: str, folder: str) -> None:
    assert catalog.create("X", kind, today=TODAY).folder == folder


def test_slugs_are_one_namespace_across_kinds(catalog: EntityCatalog) -> None:
    company = catalog.create("Acme", "company", today=TODAY)
    person = catalog.create("Acme", "person", today=TODAY)
    project = catalog.create("ACME!", "project", today=TODAY)

    assert [company.slug, person.slug, project.slug] == ["acme", "acme-2", "acme-3"]
    assert person.ref == "people/acme-2"


def test_archived_entities_keep_their_slug_taken(tx: DirTransaction) -> None:
    catalog = EntityCatalog.load(tx)
    launch = catalog.create("Launch", "project", today=TODAY)
    catalog.set_status(launch, "completed")

    reloaded = EntityCatalog.load(tx)
    assert reloaded.create("Launch", "resource", today=TODAY).slug == "launch-2"


def test_a_hand_made_folder_blocks_its_slug_and_is_read_as_an_entity(
    tx: DirTransaction, store_root: Path
) -> None:
    (store_root / "life/projects/garden").mkdir(parents=True)
    (store_root / "life/projects/garden/summary.md").write_text("# The Garden\n\nVeg beds.\n")
    (store_root / "life/areas/odd folder").mkdir(parents=True)
    catalog = EntityCatalog.load(tx)

    garden = catalog.by_ref("projects/garden")
    assert garden is not None
    assert garden.name == "The Garden"
    assert catalog.create("Garden", "area", today=TODAY).slug == "garden-2"
    assert catalog.by_ref("areas/odd folder") is None


def test_a_folder_whose_name_ends_in_a_newline_is_no_entity(
    tx: DirTransaction, store_root: Path
) -> None:
    (store_root / "life/projects/garden\n").mkdir(parents=True)
    (store_root / "life/projects/garden\n/summary.md").write_text("# The Garden\n")
    catalog = EntityCatalog.load(tx)
    assert catalog.by_ref("projects/garden\n") is None
    assert catalog.by_ref("projects/garden") is None


def test_slug_disambiguation_stays_within_the_length_bound(catalog: EntityCatalog) -> None:
    name = "N" * 64
    first = catalog.create(name, "project", today=TODAY)
    second = catalog.create(name.lower(), "company", today=TODAY)
    assert first.slug != second.slug
    assert len(second.slug) <= 64
    assert SLUG_SHAPE.match(second.slug)


@pytest.mark.parametrize("hostile", ["../../etc/passwd", "con", "people", "a/b\\c", "~root"])
def test_hostile_names_give_safe_slugs_inside_the_store(
    catalog: EntityCatalog, store_root: Path, hostile: str
) -> None:
    entity = catalog.create(hostile, "person", today=TODAY)
    assert SLUG_SHAPE.match(entity.slug)
    assert entity.slug not in {"con", "people", "etc", "passwd"} or entity.slug == "etc-passwd"
    written = store_root / entity.folder
    assert written.is_dir()
    assert written.resolve().parent == (store_root / "life/areas/people").resolve()
    assert catalog.resolve(hostile, "person") == entity


@pytest.mark.parametrize("bad", ["", "   ", "...", "\n\t"])
def test_names_without_letters_are_refused(catalog: EntityCatalog, bad: str) -> None:
    with pytest.raises(InvalidEntityError, match="no letter or digit"):
        catalog.create(bad, "person", today=TODAY)


def test_a_5000_character_name_is_refused_clearly(
    catalog: EntityCatalog, tx: DirTransaction
) -> None:
    with pytest.raises(InvalidEntityError, match="longer than"):
        catalog.create("x" * 5000, "company", today=TODAY)
    assert tx.written == []


def test_unknown_kind_and_status_are_refused(catalog: EntityCatalog) -> None:
    with pytest.raises(InvalidEntityError, match="kind"):
        catalog.create("Jane", "pet", today=TODAY)
    jane = catalog.create("Jane", "person", today=TODAY)
    with pytest.raises(InvalidEntityError, match="status"):
        catalog.set_status(jane, "dead")


def test_resolution_order_exact_name_then_alias_then_normalized(catalog: EntityCatalog) -> None:
    acme = catalog.create("Acme, Inc.", "company", ["ACME Widgets"], today=TODAY)
    widgets = catalog.create("Widgets", "project", ["Acme"], today=TODAY)

    assert catalog.resolve("Acme, Inc.") == acme
    assert catalog.resolve("Acme") == widgets  # an exact alias beats a normalized name
    assert catalog.resolve("acme inc") == acme
    assert catalog.resolve("ACME  Widgets") == acme
    assert catalog.resolve("Acme", kind="company") == acme
    assert catalog.resolve("Acme GmbH") == acme
    assert catalog.resolve("Nobody") is None


def test_kind_restricts_resolution(catalog: EntityCatalog) -> None:
    catalog.create("Mercury", "project", today=TODAY)
    assert catalog.resolve("Mercury", kind="person") is None


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("Acme Inc.", "acme"),
        ("Acme, Ltd", "ACME"),
        ("Acme L.L.C.", "Acme"),
        ("Société Générale SA", "societe generale"),
        ("  Jane   Doe ", "jane doe"),
        ("Big Co", "big"),
    ],
)
def test_normalized_names(left: str, right: str) -> None:
    assert normalize_name(left) == normalize_name(right)


def test_normalization_keeps_a_lone_suffix_word() -> None:
    assert normalize_name("Inc.") == "inc"
    assert normalize_name("Acme Labs") != normalize_name("Acme")


def test_add_aliases_merges_sorts_and_drops_the_name(
    tx: DirTransaction, catalog: EntityCatalog, store_root: Path
) -> None:
    jane = catalog.create("Jane Doe", "person", ["Jane"], today=TODAY)
    updated = catalog.add_aliases(jane, ["Jane Doe", "J. Doe", "", "Jane"])

    assert updated.aliases == ("J. Doe", "Jane")
    assert catalog.resolve("J. Doe") == updated
    stored = json.loads((store_root / jane.metadata_path).read_text())
    assert stored["aliases"] == ["J. Doe", "Jane"]

    writes = len(tx.written)
    assert catalog.add_aliases(updated, ["Jane"]) == updated
    assert len(tx.written) == writes


def test_archive_and_back_keeps_the_ref_resolving(
    tx: DirTransaction, catalog: EntityCatalog, store_root: Path
) -> None:
    launch = catalog.create("Product Launch", "project", today=TODAY)
    jane = catalog.create("Jane Doe", "person", today=TODAY)

    archived = catalog.set_status(launch, "completed")
    inactive = catalog.set_status(jane, "inactive")

    assert archived.folder == "life/archives/projects/product-launch"
    assert inactive.folder == "life/archives/areas/people/jane-doe"
    assert not (store_root / "life/projects/product-launch").exists()
    assert (store_root / "life/archives/projects/product-launch/items.json").is_file()
    reloaded = EntityCatalog.load(tx)
    assert reloaded.by_ref("projects/product-launch") == archived
    assert reloaded.resolve("Product Launch") == archived
    assert reloaded.by_ref("people/jane-doe") == inactive

    back = reloaded.set_status(archived, "active")
    assert back.folder == "life/projects/product-launch"
    assert (store_root / "life/projects/product-launch/entity.json").is_file()
    assert not (store_root / "life/archives/projects/product-launch").exists()
    assert EntityCatalog.load(tx).by_ref("projects/product-launch") == back


def test_status_change_between_archived_states_does_not_move(
    tx: DirTransaction, catalog: EntityCatalog
) -> None:
    launch = catalog.set_status(catalog.create("Launch", "project", today=TODAY), "completed")
    moves = len(tx.moved)
    inactive = catalog.set_status(launch, "inactive")
    assert len(tx.moved) == moves
    assert inactive.status == "inactive"
    assert catalog.set_status(inactive, "inactive") == inactive


def test_creating_an_entity_already_completed_files_it_in_the_archives(
    catalog: EntityCatalog,
) -> None:
    done = catalog.create("Old Launch", "project", today=TODAY, status="completed")
    assert done.folder == "life/archives/projects/old-launch"


def test_a_corrupt_entity_json_is_reported_and_left_alone(
    tx: DirTransaction, store_root: Path
) -> None:
    folder = store_root / "life/projects/broken"
    folder.mkdir(parents=True)
    (folder / "entity.json").write_text('{"name": 3}')
    with pytest.raises(CorruptFileError, match=r"entity\.json"):
        EntityCatalog.load(tx)
    assert (folder / "entity.json").read_text() == '{"name": 3}'


def test_unknown_metadata_keys_survive_a_rewrite(tx: DirTransaction, store_root: Path) -> None:
    catalog = EntityCatalog.load(tx)
    jane = catalog.create("Jane", "person", today=TODAY)
    path = store_root / jane.metadata_path
    document = json.loads(path.read_text())
    document["colour"] = "blue"
    path.write_text(json.dumps(document))

    reloaded = EntityCatalog.load(tx)
    loaded = reloaded.by_ref(jane.ref)
    assert loaded is not None
    reloaded.add_aliases(loaded, ["JJ"])
    assert json.loads(path.read_text())["colour"] == "blue"


def test_mentions_are_whole_words_case_and_accent_insensitive(catalog: EntityCatalog) -> None:
    jose = catalog.create("José Álvarez", "person", ["Pepe"], today=TODAY)
    acme = catalog.create("Acme Inc.", "company", today=TODAY)
    catalog.create("Al", "person", today=TODAY)

    text = "Met JOSE ALVAREZ and pepe today; acme's deal. Alpha, also, Albert."
    assert catalog.mentioned_in(text) == [acme, jose]
    assert catalog.mentioned_in("Talked to Jose Alvarezz") == []
    assert catalog.mentioned_in("") == []


def test_mentions_see_aliases_added_later(catalog: EntityCatalog) -> None:
    jane = catalog.create("Jane Doe", "person", today=TODAY)
    assert catalog.mentioned_in("JD says hi") == []
    updated = catalog.add_aliases(jane, ["JD"])
    assert catalog.mentioned_in("JD says hi") == [updated]


def test_mentions_scale_to_thousands_of_entities() -> None:
    catalog = EntityCatalog(MemoryTransaction())
    for number in range(3000):
        catalog.create(f"Client {number:04d} Holdings", "company", today=date(2026, 1, 1))
    text = ("lorem ipsum client 0042 holdings dolor " * 2000) + "Client 2999 Holdings."
    found = catalog.mentioned_in(text)
    assert [e.slug for e in found] == ["client-0042-holdings", "client-2999-holdings"]


@given(st.lists(st.text(max_size=40), max_size=5))
def test_created_entities_resolve_by_their_own_name_with_unique_slugs(names: list[str]) -> None:
    tx = MemoryTransaction()
    catalog = EntityCatalog.load(tx)
    created = []
    for name in names:
        try:
            created.append((name, catalog.create(name, "person", today=TODAY)))
        except InvalidEntityError:
            continue
    assert len({entity.slug for _, entity in created}) == len(created)
    reloaded = EntityCatalog.load(tx)
    for name, entity in created:
        assert SLUG_SHAPE.match(entity.slug)
        assert catalog.resolve(name, "person") is not None
        assert reloaded.by_ref(entity.ref) == entity


def test_archiving_onto_an_occupied_folder_is_refused_and_moves_nothing(
    tx: DirTransaction, catalog: EntityCatalog, store_root: Path
) -> None:
    launch = catalog.create("Launch", "project", today=TODAY)
    (store_root / "life/archives/projects/launch").mkdir(parents=True)
    with pytest.raises(StoreError):
        catalog.set_status(launch, "completed")
    assert (store_root / "life/projects/launch/entity.json").is_file()
    current = catalog.by_ref("projects/launch")
    assert current is not None
    assert current.status == "active"


def test_a_text_searched_again_finds_the_labels_added_since() -> None:
    from memoryd.store.catalog._labels import LabelMatcher

    matcher: LabelMatcher[str] = LabelMatcher()
    matcher.add("Jane Doe", "jane")
    text = "We met José Díaz and Jane Doe; ACME Corp sent the contract."
    assert matcher.find(text) == {"jane"}
    matcher.add("Acme Corp", "acme")  # occurs in the text: the remembered answer gains it
    matcher.add("Corp Acme", "other")  # its words, but not in this order
    matcher.add("Jose Diaz", "jose")  # accents folded
    matcher.add("Jane", "jane")  # a second label of a key already found
    assert matcher.find(text) == {"jane", "acme", "jose"}
    fresh: LabelMatcher[str] = LabelMatcher()
    for label, key in [
        ("Jane Doe", "jane"),
        ("Acme Corp", "acme"),
        ("Corp Acme", "other"),
        ("Jose Diaz", "jose"),
    ]:
        fresh.add(label, key)
    assert fresh.find(text) == matcher.find(text)
    found = matcher.find(text)
    found.add("mutated")  # the caller's copy: the remembered answer is not changed
    assert "mutated" not in matcher.find(text)
    for number in range(40):  # more texts than are remembered: still right
        assert matcher.find(f"text {number} about Jane Doe") == {"jane"}
