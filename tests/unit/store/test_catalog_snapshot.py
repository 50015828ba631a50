"""The entity catalogue's snapshot (`memoryd.store.catalog._snapshot`) on real git repositories:
used only for the commit it was saved at, always equal to a fresh load of the store."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import FrozenInstanceError, fields
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.support.catalog import NOW, TODAY, CountingUnit, git, seeded_store, unit

from memoryd.errors import CorruptFileError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.catalog import EntityCatalog, load_catalog, save_snapshot
from memoryd.store.catalog import _snapshot as catalog_snapshot
from memoryd.store.catalog import _snapshot_files as catalog_snapshot_files
from memoryd.store.catalog._snapshot_files import BASE_FILE, DELTA_FILE
from memoryd.store.entities import Entity


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def tables(catalog: EntityCatalog) -> dict[str, Any]:
    """Everything a catalogue looks entities up by."""
    return {
        "entities": [(e, e.extra) for e in catalog.entities()],
        "slugs": {slug: e.ref for slug, e in catalog._by_slug.items()},
        "taken": catalog._taken,
        "labels": [
            catalog._by_name,
            catalog._by_alias,
            catalog._by_normalized,
            catalog._by_skeleton,
        ],
        "mentions": _sorted_trie(catalog._mentions._root),
    }


def _sorted_trie(node: list[Any]) -> list[Any]:
    """A trie document with each node's keys sorted (their order is the order of insertion)."""
    children, keys = node
    return [{word: _sorted_trie(child) for word, child in children.items()}, sorted(keys)]


def read_base(cache: Path, store: Path) -> dict[str, Any]:
    document = catalog_snapshot_files.read_base(cache.parent / BASE_FILE, store)
    assert document is not None
    return document


def fresh(root: Path) -> dict[str, Any]:
    return tables(EntityCatalog.load(unit(root)))


def entity_reads(tx: CountingUnit) -> list[str]:
    return [path for path in tx.read if path.endswith("/entity.json")]


@pytest.fixture(autouse=True, params=["kept", "files"])
def kept_in_memory(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every test runs twice: with heartbeats that keep their catalogue for the process's next
    load (the daemon's), and with none kept, every load reading the files (a one-shot
    command's)."""
    monkeypatch.setattr(catalog_snapshot, "_kept", {})
    return bool(request.param == "kept")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return seeded_store(tmp_path)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "state" / "catalog-cache.json"


Beat = Callable[[Path, Path, Any], tuple[CountingUnit, EntityCatalog]]


@pytest.fixture
def heartbeat(kept_in_memory: bool) -> Beat:
    """What a heartbeat does: load at HEAD, change, commit, save the snapshot (keeping the
    catalogue in the "kept" runs, as the daemon does)."""

    def run(root: Path, cache: Path, change: Any) -> tuple[CountingUnit, EntityCatalog]:
        tx = unit(root)
        catalog = load_catalog(tx, cache, head=head(root))
        change(catalog)
        commit = tx.apply_and_commit("heartbeat", {})
        assert commit is not None
        save_snapshot(catalog, cache, commit, keep=kept_in_memory)
        return tx, catalog

    return run


def test_memoryds_own_commits_are_loaded_whole_from_the_snapshot(
    store: Path, cache: Path, heartbeat: Beat
) -> None:
    heartbeat(store, cache, lambda c: c.create("Globex", "company", ["GX"], today=TODAY))
    assert (cache.parent / BASE_FILE).exists()

    def changes(catalog: EntityCatalog) -> None:
        jane = catalog.by_ref("people/jane-doe")
        assert jane is not None
        catalog.add_aliases(jane, ["Janie"])
        catalog.create("Bob", "person", today=TODAY)
        acme = catalog.by_ref("companies/acme")
        assert acme is not None
        catalog.set_status(acme, "inactive")

    tx, _ = heartbeat(store, cache, changes)
    assert entity_reads(tx) == [  # read only before being changed
        "life/areas/people/jane-doe/entity.json",
        "life/areas/companies/acme/entity.json",
    ]
    assert (cache.parent / DELTA_FILE).exists()

    again = unit(store)
    with capture_logs() as logs:
        catalog = load_catalog(again, cache, head=head(store))
    assert entity_reads(again) == []
    assert any(e["event"] == "store.catalog_snapshot_loaded" for e in logs)
    assert tables(catalog) == fresh(store)
    assert [e.ref for e in catalog.mentioned_in("janie met gx and bob")] == [
        "companies/globex",
        "people/bob",
        "people/jane-doe",
    ]


def test_a_long_delta_writes_the_base_again(
    store: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, heartbeat: Beat
) -> None:
    monkeypatch.setattr(catalog_snapshot, "_DELTA_LIMIT", 1)
    heartbeat(store, cache, lambda c: c.create("One", "person", today=TODAY))
    heartbeat(store, cache, lambda c: c.create("Two", "person", today=TODAY))
    assert (cache.parent / DELTA_FILE).exists()
    heartbeat(store, cache, lambda c: c.create("Three", "person", today=TODAY))
    assert not (cache.parent / DELTA_FILE).exists()
    assert read_base(cache, store)["commit"] == head(store)
    tx = unit(store)
    assert tables(load_catalog(tx, cache, head=head(store))) == fresh(store)
    assert entity_reads(tx) == []


def test_any_other_commit_or_no_head_loads_entity_by_entity(
    store: Path, cache: Path, heartbeat: Beat
) -> None:
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    jane = store / "life/areas/people/jane-doe/entity.json"
    document = json.loads(jane.read_text())
    document["name"] = "Jane Smith"
    jane.write_text(json.dumps(document))

    tx = unit(store)
    # Uncommitted: the caller does not vouch for HEAD (no `head`), the file is read.
    catalog = load_catalog(tx, cache)
    assert "life/areas/people/jane-doe/entity.json" in entity_reads(tx)
    assert catalog.resolve("Jane Smith") is not None

    git(store, "commit", "-qam", "a person's rename")
    with capture_logs() as logs:
        catalog = load_catalog(unit(store), cache, head=head(store))
    assert not any(e["event"] == "store.catalog_snapshot_loaded" for e in logs)
    assert catalog.resolve("Jane Doe") is None
    assert tables(catalog) == fresh(store)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"not a snapshot",
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one bit of the tables changed
        lambda data: data.replace(b"marshal", b"marshal 99", 1),  # another marshal's file
        lambda data: data.replace(b"cpython-", b"pypy-", 1),  # another interpreter's
    ],
)
def test_a_damaged_or_foreign_snapshot_file_is_not_used(
    store: Path, cache: Path, damage: Any, heartbeat: Beat
) -> None:
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    base = cache.parent / BASE_FILE
    base.write_bytes(damage(base.read_bytes()))
    with capture_logs() as logs:
        catalog = load_catalog(unit(store), cache, head=head(store))
    assert not any(e["event"] == "store.catalog_snapshot_loaded" for e in logs)
    assert tables(catalog) == fresh(store)


@pytest.mark.parametrize(
    "change",
    [
        lambda doc: {**doc, "root": "/elsewhere"},
        lambda doc: {**doc, "version": 99},
        lambda doc: {**doc, "commit": None},
        lambda doc: {**doc, "slugs": {"ghost": "people/ghost"}},
        lambda doc: {**doc, "tables": doc["tables"][:2]},
        lambda doc: {**doc, "entities": [("planet", "x", False)]},
        lambda doc: [doc],
    ],
)
def test_a_snapshot_of_another_store_or_shape_is_not_used(
    store: Path, cache: Path, change: Any, heartbeat: Beat
) -> None:
    """Written whole with a right digest (as another version's memoryd or another store's
    would be), but not this store's or not this code's shape."""
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    catalog_snapshot_files.write_base(cache.parent / BASE_FILE, change(read_base(cache, store)))
    with capture_logs() as logs:
        catalog = load_catalog(unit(store), cache, head=head(store))
    assert not any(e["event"] == "store.catalog_snapshot_loaded" for e in logs)
    assert tables(catalog) == fresh(store)


def test_the_json_base_of_an_older_memoryd_is_replaced(
    store: Path, cache: Path, heartbeat: Beat
) -> None:
    old = cache.parent / "catalog-snapshot.json"
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_text('{"version": 1, "commit": "0000"}')
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    assert not old.exists()
    assert read_base(cache, store)["commit"] == head(store)


def test_an_entity_changed_under_the_heartbeat_saves_no_snapshot(
    store: Path, cache: Path, heartbeat: Beat
) -> None:
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    heartbeat(store, cache, lambda c: c.create("Bob", "person", today=TODAY))
    assert (cache.parent / DELTA_FILE).exists()

    def renamed_by_hand(catalog: EntityCatalog) -> None:
        jane = store / "life/areas/people/jane-doe/entity.json"
        document = json.loads(jane.read_text())
        document["aliases"] = []  # a person dropped "JD" after the load
        jane.write_text(json.dumps(document))
        entity = catalog.by_ref("people/jane-doe")
        assert entity is not None
        catalog.add_aliases(entity, ["Janie"])

    heartbeat(store, cache, renamed_by_hand)
    assert not (cache.parent / DELTA_FILE).exists()
    tx = unit(store)
    catalog = load_catalog(tx, cache, head=head(store))
    assert entity_reads(tx)  # entity by entity
    assert catalog.resolve("JD") is None
    assert tables(catalog) == fresh(store)


def test_a_hand_made_folder_keeps_the_catalogue_out_of_the_snapshot(
    store: Path, cache: Path, heartbeat: Beat
) -> None:
    folder = store / "life/areas/people/made-by-hand"
    folder.mkdir()
    (folder / "summary.md").write_text("# Made By Hand\n")
    git(store, "add", "-A")
    git(store, "commit", "-qm", "by hand")
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    assert not (cache.parent / BASE_FILE).exists()
    tx = unit(store)
    catalog = load_catalog(tx, cache, head=head(store))
    assert catalog.by_ref("people/made-by-hand") is not None
    assert "life/areas/people/made-by-hand/summary.md" in tx.read


def test_an_unwritable_snapshot_is_logged_and_costs_only_the_reads(
    store: Path, tmp_path: Path, heartbeat: Beat
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the state folder should be")
    cache = blocked / "catalog-cache.json"
    with capture_logs() as logs:
        heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    assert any(e["event"] == "store.catalog_cache_unwritable" for e in logs)
    assert tables(load_catalog(unit(store), cache, head=head(store))) == fresh(store)


def git_store(root: Path) -> GitStore:
    return GitStore(root, GitIdentity("memoryd", "m@x.invalid"), lambda: NOW)


def load_following(root: Path, cache: Path) -> tuple[CountingUnit, EntityCatalog, list[Any]]:
    """A load given the changes since the snapshot's commit, as the heartbeat does it."""
    tx = unit(root)
    with capture_logs() as logs:
        catalog = load_catalog(
            tx, cache, head=head(root), changed_since=git_store(root).changed_since
        )
    loaded = [e for e in logs if e["event"] == "store.catalog_snapshot_loaded"]
    return tx, catalog, loaded


def edit_metadata(root: Path, folder: str, **changes: Any) -> None:
    path = root / folder / "entity.json"
    document = json.loads(path.read_text())
    document.update(changes)
    path.write_text(json.dumps(document, indent=2) + "\n")


@pytest.fixture
def snapshotted(store: Path, cache: Path, heartbeat: Beat) -> Path:
    heartbeat(store, cache, lambda c: c.create("Globex", "company", ["GX"], today=TODAY))
    heartbeat(store, cache, lambda c: c.create("Bob", "person", today=TODAY))
    return store


def test_a_persons_commit_is_read_from_its_folders_only(snapshotted: Path, cache: Path) -> None:
    store = snapshotted
    edit_metadata(store, "life/areas/people/jane-doe", name="Jane Smith", aliases=["Janie"])
    git(store, "commit", "-qam", "a person's rename")

    tx, catalog, loaded = load_following(store, cache)
    assert loaded and loaded[0]["reread"] == 1
    assert entity_reads(tx) == ["life/areas/people/jane-doe/entity.json"]
    assert catalog.resolve("Jane Doe") is None and catalog.resolve("JD") is None
    assert [e.ref for e in catalog.mentioned_in("janie and gx")] == [
        "companies/globex",
        "people/jane-doe",
    ]
    assert tables(catalog) == fresh(store)


def test_folders_deleted_moved_and_added_by_others_give_a_fresh_loads_catalogue(
    snapshotted: Path, cache: Path, tmp_path: Path
) -> None:
    store = snapshotted
    git(store, "rm", "-rq", "life/areas/companies/globex")
    (store / "life/archives/areas/people").mkdir(parents=True, exist_ok=True)
    git(store, "mv", "life/areas/people/bob", "life/archives/areas/people/bob")
    edit_metadata(store, "life/archives/areas/people/bob", status="inactive")
    git(store, "add", "-A")
    git(store, "commit", "-qm", "by hand")
    # Another host's entities, merged in as a pull would.
    other = unit(store)
    EntityCatalog.load(other).create("Initech", "company", ["Initrode"], today=TODAY)
    other.apply_and_commit("another host", {})

    tx, catalog, loaded = load_following(store, cache)
    assert loaded and loaded[0]["reread"] == 3
    assert catalog.by_ref("companies/globex") is None
    assert "globex" not in catalog._taken
    bob = catalog.by_ref("people/bob")
    assert bob is not None and bob.archived
    assert catalog.resolve("Initrode") is not None
    assert tables(catalog) == fresh(store)

    # Its heartbeat's commit writes a new base, which the next load uses as it is.
    tx = unit(store)
    catalog = load_catalog(tx, cache, head=head(store))
    catalog.create("Umbrella", "company", today=TODAY)
    commit = tx.apply_and_commit("heartbeat", {})
    assert commit is not None
    save_snapshot(catalog, cache, commit)
    assert read_base(cache, store)["commit"] == commit
    tx, catalog, loaded = load_following(store, cache)
    assert loaded and loaded[0]["reread"] == 0
    assert entity_reads(tx) == []
    assert tables(catalog) == fresh(store)


@pytest.mark.parametrize("case", ["hand-made folder", "shared slug", "unknown commit", "corrupt"])
def test_changes_it_cannot_follow_load_entity_by_entity(
    snapshotted: Path, cache: Path, case: str
) -> None:
    store = snapshotted
    if case == "hand-made folder":
        folder = store / "life/areas/people/made-by-hand"
        folder.mkdir()
        (folder / "summary.md").write_text("# Made By Hand\n")
    elif case == "shared slug":
        folder = store / "life/areas/companies/bob"
        folder.mkdir()
        (folder / "entity.json").write_text(
            json.dumps({"name": "Bob Inc", "kind": "company", "status": "active"})
        )
    elif case == "unknown commit":
        delta = cache.parent / DELTA_FILE
        document = json.loads(delta.read_text())
        delta.write_text(json.dumps({**document, "commit": "0" * 40}))
        (store / "notes.md").write_text("a change outside life/\n")
    else:
        (store / "life/areas/people/jane-doe/entity.json").write_text("{not json")
    git(store, "add", "-A")
    git(store, "commit", "-qm", case)

    if case == "corrupt":
        with pytest.raises(CorruptFileError):
            load_following(store, cache)
        return
    _, catalog, loaded = load_following(store, cache)
    assert loaded == []
    assert tables(catalog) == fresh(store)


def test_changes_outside_the_entity_folders_keep_the_snapshot_and_its_delta(
    snapshotted: Path, cache: Path
) -> None:
    store = snapshotted
    (store / "life/index.md").write_text("# edited by hand\n")
    (store / "notes.md").write_text("a note\n")
    git(store, "add", "-A")
    git(store, "commit", "-qm", "elsewhere")
    tx, catalog, loaded = load_following(store, cache)
    assert loaded and loaded[0]["reread"] == 0 and loaded[0]["replayed"] > 0
    assert entity_reads(tx) == []
    assert tables(catalog) == fresh(store)


def test_an_entity_from_a_snapshot_is_the_entity_itself() -> None:
    # `_built` sets the fields directly: it must stay what `Entity(...)` makes.
    assert not hasattr(Entity, "__post_init__") and not hasattr(Entity, "__slots__")
    assert [f.name for f in fields(Entity)] == list(catalog_snapshot_files._ENTITY_FIELDS)
    made = Entity(
        name="Zoë Acme",
        kind="company",
        slug="zoe-acme",
        status="completed",
        aliases=("Acme", "ZA"),
        created=date(2026, 1, 2),
        archived=True,
        extra={"homepage": "https://acme.invalid"},
    )
    document = catalog_snapshot_files.entity_document(made)
    loaded = catalog_snapshot_files.entity_from_document(document, "company", "zoe-acme", True)
    assert loaded is not None
    assert loaded == made and hash(loaded) == hash(made) and repr(loaded) == repr(made)
    assert vars(loaded) == vars(made) and loaded.ref == made.ref
    with pytest.raises(FrozenInstanceError):
        loaded.name = "other"  # type: ignore[misc]


def loaded_events(logs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in logs if e["event"] == "store.catalog_snapshot_loaded"]


def test_the_next_load_in_the_process_takes_the_catalogue_the_save_kept(
    store: Path, cache: Path, kept_in_memory: bool, heartbeat: Beat
) -> None:
    _, saved = heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    tx = unit(store)
    with capture_logs() as logs:
        catalog = load_catalog(tx, cache, head=head(store))
    assert [e["kept"] for e in loaded_events(logs)] == [kept_in_memory]
    assert (catalog is saved) == kept_in_memory
    assert catalog._tx is tx and catalog.changed_refs() == set()
    assert entity_reads(tx) == []
    assert tables(catalog) == fresh(store)
    # Taken once: a second load in the same heartbeat's place reads the files.
    with capture_logs() as logs:
        again = load_catalog(unit(store), cache, head=head(store))
    assert [e["kept"] for e in loaded_events(logs)] == [False]
    assert again is not catalog and tables(again) == fresh(store)


def test_a_catalogue_changed_by_a_heartbeat_that_saved_nothing_is_not_taken_again(
    store: Path, cache: Path, heartbeat: Beat
) -> None:
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    failed = load_catalog(unit(store), cache, head=head(store))
    failed.create("Never Committed", "company", today=TODAY)  # then the heartbeat failed
    with capture_logs() as logs:
        catalog = load_catalog(unit(store), cache, head=head(store))
    assert [e["kept"] for e in loaded_events(logs)] == [False]
    assert catalog.resolve("Never Committed") is None
    assert tables(catalog) == fresh(store)


def test_snapshot_files_written_again_by_another_process_are_read(
    store: Path, cache: Path, heartbeat: Beat
) -> None:
    heartbeat(store, cache, lambda c: c.create("Globex", "company", today=TODAY))
    heartbeat(store, cache, lambda c: c.create("Bob", "person", today=TODAY))
    delta = cache.parent / DELTA_FILE
    # Another process (a one-shot command) wrote the same delta again: a new file.
    copy = delta.with_name("copy")
    copy.write_bytes(delta.read_bytes())
    copy.replace(delta)
    with capture_logs() as logs:
        catalog = load_catalog(unit(store), cache, head=head(store))
    assert [(e["kept"], e["replayed"]) for e in loaded_events(logs)] == [(False, 1)]
    assert tables(catalog) == fresh(store)


def test_a_kept_catalogue_follows_a_persons_commit_as_the_files_do(
    snapshotted: Path, cache: Path, kept_in_memory: bool
) -> None:
    store = snapshotted
    edit_metadata(store, "life/areas/people/jane-doe", name="Jane Smith")
    git(store, "commit", "-qam", "a person's rename")
    tx, catalog, loaded = load_following(store, cache)
    assert [(e["kept"], e["reread"]) for e in loaded] == [(kept_in_memory, 1)]
    assert entity_reads(tx) == ["life/areas/people/jane-doe/entity.json"]
    assert catalog.resolve("Jane Doe") is None
    assert tables(catalog) == fresh(store)
