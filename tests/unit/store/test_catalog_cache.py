"""The entity catalogue's cache (`memoryd.store.catalog._cache`) on real git repositories: used
when nothing changed, and every kind of change to an `entity.json` is seen at the next load."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.support.catalog import TODAY, CountingUnit, git, seeded_store, unit

from memoryd.errors import PathEscapeError
from memoryd.store.catalog import EntityCatalog, load_catalog
from memoryd.store.entities import Entity

JANE = "life/areas/people/jane-doe/entity.json"


def metadata_reads(tx: CountingUnit) -> list[str]:
    return sorted(path for path in tx.read if path.endswith("/entity.json"))


def snapshot(catalog: EntityCatalog) -> list[tuple[Entity, dict[str, object]]]:
    return [(entity, entity.extra) for entity in catalog.entities()]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return seeded_store(tmp_path)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "state" / "catalog-cache.json"


def test_an_unchanged_store_is_loaded_from_the_cache_without_reading_entity_files(
    store: Path, cache: Path
) -> None:
    first = unit(store)
    built = load_catalog(first, cache)
    assert len(metadata_reads(first)) == 3
    assert cache.is_file()

    second = unit(store)
    cached = load_catalog(second, cache)

    assert metadata_reads(second) == []
    assert snapshot(cached) == snapshot(built) == snapshot(EntityCatalog.load(unit(store)))
    assert cached.by_ref("projects/old-project") is not None
    assert cached.by_ref("projects/old-project").archived  # type: ignore[union-attr]
    assert cached.resolve("JD") == cached.by_ref("people/jane-doe")


def test_a_change_by_memoryd_is_read_again(store: Path, cache: Path) -> None:
    load_catalog(unit(store), cache)
    tx = unit(store)
    catalog = load_catalog(tx, cache)
    jane = catalog.by_ref("people/jane-doe")
    assert jane is not None
    catalog.add_aliases(jane, ["Janie"])
    catalog.create("Bob Roe", "person", today=TODAY)
    tx.apply_and_commit("aliases", {})

    again = unit(store)
    loaded = load_catalog(again, cache)

    assert metadata_reads(again) == sorted([JANE, "life/areas/people/bob-roe/entity.json"])
    assert loaded.resolve("Janie") == loaded.by_ref("people/jane-doe")
    assert loaded.by_ref("people/bob-roe") is not None
    third = unit(store)
    load_catalog(third, cache)
    assert metadata_reads(third) == []


def edit_metadata(path: Path, **changes: object) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    document.update(changes)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def test_a_persons_commit_is_seen(store: Path, cache: Path) -> None:
    load_catalog(unit(store), cache)
    edit_metadata(store / JANE, name="Jane Smith")
    git(store, "commit", "-qam", "Jane married")

    tx = unit(store)
    catalog = load_catalog(tx, cache)

    assert metadata_reads(tx) == [JANE]
    assert catalog.by_ref("people/jane-doe").name == "Jane Smith"  # type: ignore[union-attr]


def test_an_uncommitted_edit_in_place_is_seen(store: Path, cache: Path) -> None:
    load_catalog(unit(store), cache)
    path = store / JANE
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    # Same size, same inode, written in place: only the times (and the content) differ.
    with path.open("r+", encoding="utf-8") as handle:
        handle.write(text.replace('"JD"', '"JX"'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # even the mtime put back
    assert os.stat(path).st_ino == before.st_ino

    tx = unit(store)
    catalog = load_catalog(tx, cache)

    assert metadata_reads(tx) == [JANE]
    assert catalog.resolve("JX") == catalog.by_ref("people/jane-doe")
    assert catalog.resolve("JD", "person") is None


def test_a_pull_from_another_host_is_seen(store: Path, cache: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    git(store, "remote", "add", "origin", str(remote))
    git(store, "push", "-q", "origin", "main")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    load_catalog(unit(store), cache)

    edit_metadata(other / JANE, aliases=["JD", "Jane D."])
    git(other, "rm", "-rq", "life/areas/companies/acme")
    other_tx = unit(other)
    EntityCatalog.load(other_tx).create("Carol Poe", "person", today=TODAY)
    other_tx.apply_and_commit("from the other host", {})
    git(other, "commit", "-qam", "aliases and a removal")
    git(other, "push", "-q", "origin", "main")
    git(store, "pull", "-q", "--ff-only", "origin", "main")

    tx = unit(store)
    catalog = load_catalog(tx, cache)

    assert metadata_reads(tx) == sorted([JANE, "life/areas/people/carol-poe/entity.json"])
    assert catalog.resolve("Jane D.") == catalog.by_ref("people/jane-doe")
    assert catalog.by_ref("companies/acme") is None
    assert catalog.by_ref("people/carol-poe") is not None
    assert snapshot(catalog) == snapshot(EntityCatalog.load(unit(store)))


@pytest.mark.parametrize("content", ["not json", '{"version": 99}', "[]", '{"version": 2}'])
def test_a_broken_or_foreign_cache_is_rebuilt(store: Path, cache: Path, content: str) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_text(content, encoding="utf-8")

    tx = unit(store)
    catalog = load_catalog(tx, cache)

    assert len(metadata_reads(tx)) == 3
    assert snapshot(catalog) == snapshot(EntityCatalog.load(unit(store)))
    assert json.loads(cache.read_text(encoding="utf-8"))["version"] == 2


def test_a_bad_cached_entry_is_read_from_the_store(store: Path, cache: Path) -> None:
    load_catalog(unit(store), cache)
    document = json.loads(cache.read_text(encoding="utf-8"))
    document["folders"]["life/areas/people/jane-doe"][1]["status"] = "gone"
    cache.write_text(json.dumps(document), encoding="utf-8")

    tx = unit(store)
    catalog = load_catalog(tx, cache)

    assert metadata_reads(tx) == [JANE]
    assert catalog.by_ref("people/jane-doe").status == "active"  # type: ignore[union-attr]


def test_an_edit_after_the_load_is_kept_when_memoryd_changes_the_entity(
    store: Path, cache: Path
) -> None:
    load_catalog(unit(store), cache)
    tx = unit(store)
    catalog = load_catalog(tx, cache)
    jane = catalog.by_ref("people/jane-doe")
    assert jane is not None
    edit_metadata(store / JANE, aliases=["JD", "Janet"])  # by hand, while the heartbeat runs

    catalog.add_aliases(jane, ["Janie"])
    tx.apply_and_commit("aliases", {})

    written = json.loads((store / JANE).read_text(encoding="utf-8"))
    assert written["aliases"] == ["JD", "Janet", "Janie"]


def test_an_unwritable_cache_only_costs_the_reads(store: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the state folder should be", encoding="utf-8")
    cache = blocker / "catalog-cache.json"

    for _ in range(2):
        tx = unit(store)
        catalog = load_catalog(tx, cache)
        assert len(metadata_reads(tx)) == 3
        assert len(catalog) == 3


def test_cached_label_forms_find_mentions_and_look_alikes_as_a_fresh_load_does(
    store: Path, cache: Path
) -> None:
    load_catalog(unit(store), cache)
    tx = unit(store)
    cached = load_catalog(tx, cache)
    fresh = EntityCatalog.load(unit(store))

    assert metadata_reads(tx) == []
    text = "Met JANE DOE and jd from ACME about the old project"
    assert cached.mentioned_in(text) == fresh.mentioned_in(text)
    assert [e.ref for e in cached.mentioned_in(text)] == [
        "companies/acme",
        "people/jane-doe",
        "projects/old-project",
    ]
    lookalike = "\u0410cme"  # a Cyrillic A
    assert cached.resolve(lookalike) == fresh.resolve(lookalike) == cached.by_ref("companies/acme")


def test_a_memoryd_that_normalizes_names_otherwise_reads_everything_again(
    store: Path, cache: Path
) -> None:
    load_catalog(unit(store), cache)
    document = json.loads(cache.read_text(encoding="utf-8"))
    document["probe"][0][0] = "normalized some other way"
    cache.write_text(json.dumps(document), encoding="utf-8")

    tx = unit(store)
    load_catalog(tx, cache)

    assert len(metadata_reads(tx)) == 3


def test_bad_cached_label_forms_are_computed_again(store: Path, cache: Path) -> None:
    load_catalog(unit(store), cache)
    document = json.loads(cache.read_text(encoding="utf-8"))
    document["folders"]["life/areas/people/jane-doe"][2] = [["too", "short"]]
    cache.write_text(json.dumps(document), encoding="utf-8")

    tx = unit(store)
    catalog = load_catalog(tx, cache)

    assert metadata_reads(tx) == [JANE]
    assert catalog.resolve("JD") == catalog.by_ref("people/jane-doe")


def test_a_hand_made_folder_is_read_every_time(store: Path, cache: Path) -> None:
    load_catalog(unit(store), cache)
    hand_made = store / "life/areas/people/bob-roe"
    hand_made.mkdir()
    (hand_made / "summary.md").write_text("# Bob Roe\n", encoding="utf-8")

    for _ in range(2):
        tx = unit(store)
        catalog = load_catalog(tx, cache)
        assert metadata_reads(tx) == ["life/areas/people/bob-roe/entity.json"]
        assert catalog.by_ref("people/bob-roe").name == "Bob Roe"  # type: ignore[union-attr]


def test_a_linked_entity_file_is_refused_as_without_a_cache(
    store: Path, cache: Path, tmp_path: Path
) -> None:
    load_catalog(unit(store), cache)
    outside = tmp_path / "outside.json"
    outside.write_text('{"name": "Acme Corp"}\n', encoding="utf-8")
    acme = store / "life/areas/companies/acme/entity.json"
    acme.unlink()
    acme.symlink_to(outside)

    for load in (EntityCatalog.load, lambda tx: load_catalog(tx, cache)):
        with pytest.raises(PathEscapeError):
            load(unit(store))
