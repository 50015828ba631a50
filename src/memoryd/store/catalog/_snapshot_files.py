"""The files of the entity catalogue's snapshot (`memoryd.store.catalog._snapshot`): their
names and formats, and an entity as they keep it. Two files of the state directory, next to
the catalogue's cache:

- `catalog-snapshot.bin`, the base: every table of the catalogue, written at commit B, in the
  interpreter's own `marshal` format, which loads sets, dicts and lists in one C call, about
  twice as fast as the JSON it replaced (`catalog-snapshot.json`, removed when a base is
  written). The file starts with a line naming the interpreter and marshal version that wrote
  it, and a BLAKE2b digest of the rest: another Python's file, or a truncated or damaged one,
  is not loaded, so the tables inside are taken as this code wrote them, without a check per
  node. (The state directory is memoryd's own: whoever can write in it can already change what
  memoryd files.)
- `catalog-snapshot-delta.json`: the entities memoryd created or changed in its commits since
  B, at their state of commit H (the last heartbeat's commit).

Both carry a header: this code's version, the store's root, and the forms of a probe label
(a memoryd whose normalizing or look-alike folding differs computes other forms, and the files
are not used). `memoryd.store.catalog._cache` keeps entities in the same document form, and
both tell a file unchanged by its `stat_key`.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import stat
import sys
from datetime import date
from pathlib import Path
from typing import Any

from memoryd.store.catalog._catalog import CatalogTables, EntityCatalog
from memoryd.store.catalog._labels import LabelMatcher, label_forms
from memoryd.store.entities import Entity
from memoryd.store.vocabulary import KINDS, STATUSES, EntityKind, EntityStatus
from memoryd.worktree import FileTransaction, atomic_write_bytes, atomic_write_text

SNAPSHOT_VERSION = 2
_KINDS: dict[str, EntityKind] = {kind: kind for kind in KINDS}
_STATUSES: dict[str, EntityStatus] = {status: status for status in STATUSES}
BASE_FILE = "catalog-snapshot.bin"
DELTA_FILE = "catalog-snapshot-delta.json"
OLD_BASE_FILE = "catalog-snapshot.json"  # the JSON base of memoryd before 2026-12
# The base file's first line: what wrote it (marshal's format is the interpreter's own).
_MAGIC = f"memoryd catalogue snapshot {sys.implementation.cache_tag} marshal {marshal.version}\n"
_DIGEST_SIZE = 32
# A label whose forms are kept in the files' headers: a memoryd whose normalizing or look-alike
# folding differs computes other forms, and the files are not used.
_PROBE = Entity(
    name="Zo\u00eb \u013f'Acme-42 \u216b", kind="person", slug="probe", aliases=("\uff21cme",)
)


# A file's inode, size, and modification and change times in nanoseconds: any change to the
# file gives another key (an atomic write, a new inode), bar git's "racy" case (an edit in
# place of the same size within one timestamp tick).
FileKey = list[int]


def stat_key(path: str | Path) -> FileKey | None:
    """The key of a regular file at `path` (no link followed at its last component), or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def probe() -> list[list[Any]]:
    """The probe label's forms, as the files keep them."""
    return [[a, b, list(c), list(d)] for a, b, c, d in label_forms(_PROBE)]


def entity_document(entity: Entity) -> dict[str, Any]:
    """An entity's metadata as the catalogue files keep it (kind, slug and folder aside)."""
    return {
        "name": entity.name,
        "status": entity.status,
        "aliases": list(entity.aliases),
        "created": entity.created.isoformat() if entity.created else None,
        "extra": entity.extra,
    }


def entity_from_document(document: Any, kind: Any, slug: Any, archived: Any) -> Entity | None:
    """The entity `entity_document` described, or None when it is not one this code wrote.
    Runs once per entity of a snapshot: plain look-ups and type checks, nothing more."""
    try:
        name, aliases, created = document["name"], document["aliases"], document["created"]
        checked_kind, status = _KINDS[kind], _STATUSES[document["status"]]
        extra = dict(document["extra"])
        if not (
            type(name) is str
            and type(slug) is str
            and type(archived) is bool
            and type(aliases) is list
            and all(type(alias) is str for alias in aliases)
        ):
            return None
        return _built(
            name=name,
            kind=checked_kind,
            slug=slug,
            status=status,
            aliases=tuple(aliases),
            created=date.fromisoformat(created) if created else None,
            archived=archived,
            extra=extra,
        )
    except (KeyError, TypeError, ValueError):
        return None


_ENTITY_FIELDS = ("name", "kind", "slug", "status", "aliases", "created", "archived", "extra")


def _built(**fields: Any) -> Entity:
    """`Entity(**fields)` for fields already checked, without the frozen dataclass's
    `__init__`, which sets each of the eight fields through `object.__setattr__` (a third of a
    snapshot's load on a store of 5,000 entities): the instance's attributes are set at once,
    to the same values. Entity has no `__post_init__` and no slots, and every field is given
    (tests/unit/store/test_catalog_snapshot.py checks both against `Entity` itself)."""
    entity: Entity = object.__new__(Entity)
    vars(entity).update(fields)
    return entity


def header(root: Path) -> dict[str, Any]:
    """What both files start with: this code's version, the store's root, the probe's forms."""
    return {"version": SNAPSHOT_VERSION, "root": str(root), "probe": probe()}


def read_delta(path: Path, root: Path) -> dict[str, Any] | None:
    """The delta document in `path`, or None when it is missing, unreadable or not this
    store's."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return of_this_store(document, root)


def write_delta(path: Path, document: dict[str, Any]) -> None:
    """Write a delta document (`header` and `base`, `commit`, `entities`) atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(document, ensure_ascii=False, separators=(",", ":")))


def read_base(path: Path, root: Path) -> dict[str, Any] | None:
    """The base document in `path`, or None when the file is missing, was written by another
    interpreter or marshal version, fails its digest, or describes another store."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    magic = _MAGIC.encode()
    digest_end = len(magic) + 2 * _DIGEST_SIZE
    if not data.startswith(magic) or data[digest_end : digest_end + 1] != b"\n":
        return None
    payload = memoryview(data)[digest_end + 1 :]
    if hashlib.blake2b(payload, digest_size=_DIGEST_SIZE).hexdigest() != data[
        len(magic) : digest_end
    ].decode("ascii", "replace"):
        return None
    try:
        document = marshal.loads(payload)  # noqa: S302 - digest-checked, memoryd's own file
    except (EOFError, ValueError, TypeError):
        return None
    return of_this_store(document, root)


def of_this_store(document: Any, root: Path) -> dict[str, Any] | None:
    """`document` when it is a snapshot file's of this code and of the store at `root`."""
    if not isinstance(document, dict) or not isinstance(document.get("commit"), str):
        return None
    found = {key: document.get(key) for key in ("version", "root", "probe")}
    return document if found == header(root) else None


def write_base(path: Path, document: dict[str, Any]) -> None:
    """Write the base document atomically, behind its magic line and digest."""
    payload = marshal.dumps(document)
    digest = hashlib.blake2b(payload, digest_size=_DIGEST_SIZE).hexdigest()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, f"{_MAGIC}{digest}\n".encode() + payload)


def base_document(catalog: EntityCatalog, commit: str) -> dict[str, Any]:
    """The base as `_catalog` reads it back: each entity a tuple of its fields (its creation
    date in ISO form), the tables and the trie as the catalogue holds them."""
    tables = catalog.export_tables()
    return header(catalog.root) | {
        "commit": commit,
        "entities": [
            (
                e.kind,
                e.slug,
                e.archived,
                e.name,
                e.status,
                tuple(e.aliases),
                e.created.isoformat() if e.created else None,
                e.extra,
            )
            for e in tables.by_ref.values()
        ],
        "slugs": {slug: entity.ref for slug, entity in tables.by_slug.items()},
        "taken": set(tables.taken),
        "tables": list(tables.labels),
        "mentions": tables.mentions.trie,
    }


def catalog_from_base(tx: FileTransaction, base: dict[str, Any]) -> EntityCatalog:
    """The catalogue the base describes (a file this code wrote: see the module docstring);
    raise KeyError, TypeError or ValueError if it is not shaped as one."""
    by_ref: dict[str, Entity] = {}
    from_iso = date.fromisoformat
    for kind, slug, archived, name, status, aliases, created, extra in base["entities"]:
        entity = _built(
            name=name,
            kind=kind,
            slug=slug,
            status=status,
            aliases=aliases,
            created=from_iso(created) if created else None,
            archived=archived,
            extra=extra,
        )
        by_ref[entity.ref] = entity
    by_slug = {slug: by_ref[ref] for slug, ref in base["slugs"].items()}
    taken = base["taken"]
    tables = base["tables"]
    if len(tables) != 4 or not all(type(table) is dict for table in tables):
        raise ValueError("not the catalogue's four label tables")
    mentions: LabelMatcher[str] = LabelMatcher.from_trie(base["mentions"])
    return EntityCatalog.from_tables(
        tx, CatalogTables(by_ref, by_slug, taken, tuple(tables), mentions)
    )
