"""A cache of the entity catalogue, so that a heartbeat does not read every `entity.json`.

The store stays the truth. The cache (a JSON file in the state directory, passed in by the
caller) keeps each entity with the stat key of the `entity.json` it was read from: inode, size,
modification and change times in nanoseconds. `load_catalog` lists the bucket folders as
`EntityCatalog.load` does, and takes an entity from the cache only when its file still has the
same key (an `lstat`, no read); any other folder is read through the transaction, as without a
cache. A change of any kind is therefore seen at the next load: memoryd's own writes (atomic,
so a new inode), a person's commit or uncommitted hand edit, a checkout or a merge of another
host's work (git writes new files). A missing, unreadable or foreign cache is rebuilt; the file
is rewritten only when something had to be read. A heartbeat on an unchanged store costs one
`lstat` per entity instead of a read, a digest and a parse.

Limits, stated: an edit made in place that keeps the file's size and lands within the same
file-system timestamp tick as the file's previous change is not seen (git's "racy" case;
the tick is a few milliseconds). Folders without `entity.json` (made by hand), symbolic links
and anything the transaction would refuse are never cached: they are read every time, with the
same errors as an uncached load. Entities taken from the cache are not reads of the
transaction; the catalogue reads an entity's folder through the transaction before changing it
(`EntityCatalog._current`), so a change is still checked against what is on disk.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import structlog

from memoryd.store import CATALOG_CACHE_FILE
from memoryd.store.catalog._catalog import EntityCatalog
from memoryd.store.catalog._labels import LabelForms, label_forms
from memoryd.store.catalog._snapshot import load_snapshot, loaded_completely
from memoryd.store.catalog._snapshot_files import (
    FileKey,
    entity_document,
    entity_from_document,
    probe,
    stat_key,
)
from memoryd.store.entities import METADATA_FILE, Entity
from memoryd.store.vocabulary import EntityKind
from memoryd.worktree import FileTransaction, atomic_write_text

log = structlog.get_logger("memoryd.store.catalog_cache")  # the name its events always had

CACHE_VERSION = 2
# The probe label's forms are kept in the cache's header (`catalog_snapshot_files.probe`): a memoryd
# whose normalizing or look-alike folding differs computes other forms, and the whole cache is
# then read again.
CACHE_FILE = CATALOG_CACHE_FILE  # its name in the state directory


def load_catalog(
    tx: FileTransaction,
    cache_file: Path,
    *,
    head: str | None = None,
    changed_since: Callable[[str], Sequence[str] | None] | None = None,
) -> EntityCatalog:
    """The store's catalogue as `EntityCatalog.load(tx)` reads it, from `cache_file` where the
    files are unchanged; the cache is brought up to date. Raise as `EntityCatalog.load`.

    `head`: given when the caller knows the entity folders are exactly that commit (HEAD, and
    nothing under `life/` uncommitted); the catalogue then comes whole from its snapshot when
    one was saved at `head` (`memoryd.store.catalog._snapshot`), without a step per entity, or
    at an earlier commit whose changes since (`changed_since`) are few."""
    if head is not None:
        snapshot = load_snapshot(tx, cache_file, head, changed_since)
        if snapshot is not None:
            return snapshot
    root = tx.root
    base = str(root)
    cached = _read_cache(cache_file, root)
    kept: dict[str, list[Any]] = {}
    known_forms: dict[str, list[LabelForms]] = {}
    reads = 0
    incomplete = False  # a folder without a regular entity.json, read every time
    reader = EntityCatalog(tx)

    def read(folder: str, kind: EntityKind, slug: str, archived: bool) -> Entity | None:
        nonlocal reads, incomplete
        # The key before the read: a file changed in between is read again next time.
        key = _folder_key(base, folder)
        hit = cached.get(folder)
        if key is not None and hit is not None and hit[0] == key:
            entity = entity_from_document(hit[1], kind, slug, archived)
            forms = _forms(hit[2])
            if entity is not None and forms is not None:
                kept[folder] = hit
                known_forms[entity.ref] = forms
                return entity
        reads += 1
        entity = reader.read_folder(folder, kind, slug, archived)
        incomplete = incomplete or (key is None and entity is not None)
        if key is not None and entity is not None:
            forms = label_forms(entity)
            kept[folder] = [key, entity_document(entity), forms]
            known_forms[entity.ref] = forms
        return entity

    catalog = EntityCatalog.load(tx, read_folder=read, forms=lambda e: known_forms.get(e.ref))
    if reads or kept.keys() != cached.keys():
        _write_cache(cache_file, root, kept)
    if not incomplete:
        loaded_completely(catalog)
    log.debug("store.catalog_loaded", entities=len(catalog), read=reads, cached=len(kept))
    return catalog


def _folder_key(root: str, folder: str) -> FileKey | None:
    # Plain strings, not Path objects: this runs once per entity of the store.
    where = f"{root}/{folder}"
    try:
        if not stat.S_ISDIR(os.lstat(where).st_mode):
            return None
    except OSError:
        return None
    return stat_key(f"{where}/{METADATA_FILE}")


def _forms(cached: Any) -> list[LabelForms] | None:
    """The cached label forms, or None when they are not what this code wrote."""
    try:
        return [
            (str(normalized), str(look), tuple(map(str, label)), tuple(map(str, normal)))
            for normalized, look, label, normal in cached
        ]
    except (TypeError, ValueError):
        return None


def _read_cache(cache_file: Path, root: Path) -> dict[str, list[Any]]:
    try:
        document = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if (
        not isinstance(document, dict)
        or document.get("version") != CACHE_VERSION
        or document.get("root") != str(root)
        or document.get("probe") != probe()
        or not isinstance(document.get("folders"), dict)
    ):
        return {}
    return {
        folder: entry
        for folder, entry in document["folders"].items()
        if isinstance(entry, list) and len(entry) == 3
    }


def _write_cache(cache_file: Path, root: Path, folders: dict[str, list[Any]]) -> None:
    document = {
        "version": CACHE_VERSION,
        "root": str(root),
        "probe": probe(),
        "folders": folders,
    }
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache_file, json.dumps(document, ensure_ascii=False, sort_keys=True))
    except OSError as error:
        # Only a cache: the next load reads the store again.
        log.warning("store.catalog_cache_unwritable", path=str(cache_file), error=str(error))
