"""The entity catalogue saved whole at a commit, so that a heartbeat on a store nobody else
changed loads it without a step per entity.

`memoryd.store.catalog_cache` still answers entity by entity (an `lstat` of each `entity.json`,
then the entity and its label forms registered one at a time): on a store of 5,000 entities
that is most of a heartbeat's extra cost. A snapshot instead keeps the catalogue's lookup tables
as they are (entities, slugs, the label tables and the mention trie), keyed by the git commit
they describe, in two files of the state directory next to the cache:

- `catalog-snapshot.bin`, the base: every table, written at commit B, in the interpreter's own
  `marshal` format, which loads sets, dicts and lists in one C call, about twice as fast as the
  JSON it replaced (`catalog-snapshot.json`, removed when a base is written). The file starts
  with a line naming the interpreter and marshal version that wrote it, and a BLAKE2b digest of
  the rest: another Python's file, or a truncated or damaged one, is not loaded, so the tables
  inside are taken as this code wrote them, without a check per node. (The state directory is
  memoryd's own: whoever can write in it can already change what memoryd files.)
- `catalog-snapshot-delta.json`: the entities memoryd created or changed in its commits since
  B, at their state of commit H (the last heartbeat's commit), so that a heartbeat rewrites a
  few entities, not the whole base. When the delta grows past `_DELTA_LIMIT` entities (or a
  tenth of the store) the base is written again.

`load_snapshot(tx, file, head, changed_since)` gives the catalogue back only when the caller
vouches that the store's entity folders are exactly commit `head` (HEAD is `head` and nothing
under `life/` is left uncommitted: the heartbeat knows it from the foreign-edits step that just
ran `git status`), and the files were written for this store's root, by a memoryd folding
labels the same way. When they describe an earlier commit S (the delta's H, or B without a
delta) and `head` differs (a person's commit or the heartbeat's commit of their uncommitted
edits, a pull, a rewrite, `forget`), `git diff --name-only S HEAD` names the bucket entries to
read again: each one's old entity is taken out of every table and its folder read again, so
the tables stay those of a fresh load; the next save then writes a new base. A lost, corrupt
or foreign file, an unknown S, more than `_CHANGED_LIMIT` entries changed, a slug two entities
share, or a changed folder without a regular `entity.json` gives None, and the caller loads
entity by entity.

Replaying the delta registers each entity's final state over the base's: memoryd's own changes
only add labels (new entities, new aliases, a status and its folder), so the tables equal those
of a fresh load. A heartbeat that met an entity changed on disk under it
(`EntityCatalog.exact_labels` false), whose catalogue did not come from a complete load (a
folder without `entity.json`, a symbolic link: their content can change without a commit
saying so), or whose own writes were withheld, saves nothing; the next load is then entity by
entity, and its heartbeat's commit writes a new base.

In a long-lived process (the daemon) the files are not even read back: a save asked to keep
(`save_snapshot(keep=True)`, the daemon's heartbeats) keeps the catalogue it saved, and the
process's next load of the same store takes it instead of the files' tables, when the base
and delta files are still the ones that save wrote (same inode, size and times: another
process's write, atomic, makes new files). It is taken once: the heartbeat that takes it
changes it, and only its own save keeps it again. So the daemon's heartbeat costs no step per
entity even for the load. A one-shot command keeps nothing: it would only carry the catalogue
to its exit, which measured 0.05-0.15 s more a heartbeat on a store of 5,000 entities.
Until then the kept catalogue holds the last heartbeat's transaction (what it read and wrote).
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import stat
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import structlog

from memoryd.collector import long_lived
from memoryd.errors import CorruptFileError
from memoryd.store.atomic import atomic_write_bytes, atomic_write_text
from memoryd.store.catalog import (
    _NESTED_BUCKETS,
    _SLUG_SHAPE,
    EntityCatalog,
    bucket_entry,
    label_forms,
)
from memoryd.store.entities import (
    ARCHIVES,
    LAYOUTS,
    LIFE,
    METADATA_FILE,
    Entity,
    entity_folder,
)
from memoryd.store.labels import LabelMatcher
from memoryd.store.transaction import FileTransaction
from memoryd.store.vocabulary import KINDS, STATUSES, EntityKind, EntityStatus

log = structlog.get_logger(__name__)

SNAPSHOT_VERSION = 2
_KINDS: dict[str, EntityKind] = {kind: kind for kind in KINDS}
_STATUSES: dict[str, EntityStatus] = {status: status for status in STATUSES}
BASE_FILE = "catalog-snapshot.bin"
DELTA_FILE = "catalog-snapshot-delta.json"
_OLD_BASE_FILE = "catalog-snapshot.json"  # the JSON base of memoryd before 2026-12
# The base file's first line: what wrote it (marshal's format is the interpreter's own).
_MAGIC = f"memoryd catalogue snapshot {sys.implementation.cache_tag} marshal {marshal.version}\n"
_DIGEST_SIZE = 32
_DELTA_LIMIT = 500
_CHANGED_LIMIT = 200  # bucket entries changed by others read again; more: entity by entity
# A label whose forms are kept in the files' headers: a memoryd whose normalizing or look-alike
# folding differs computes other forms, and the files are not used.
_PROBE = Entity(
    name="Zo\u00eb \u013f'Acme-42 \u216b", kind="person", slug="probe", aliases=("\uff21cme",)
)


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


@dataclass
class _Origin:
    """How a catalogue was loaded: from a snapshot (its base commit and the delta replayed) or
    completely from the store (`base` None)."""

    base: str | None
    delta: dict[str, list[Any]] = field(default_factory=dict)  # ref -> [kind, slug, archived, doc]
    # The store paths changed by others since the snapshot's commit, or None when the catalogue
    # was not loaded from a snapshot (nothing is known of what changed since memoryd looked).
    followed: list[str] | None = None


# The catalogues this process loaded and may save (weak: a catalogue is not kept alive by it).
_origins: weakref.WeakKeyDictionary[EntityCatalog, _Origin] = weakref.WeakKeyDictionary()


def loaded_completely(catalog: EntityCatalog) -> None:
    """Note that `catalog` was loaded from every entity folder, each with a regular
    `entity.json`: a snapshot of it may be saved after a commit."""
    _origins[catalog] = _Origin(base=None)


def followed_paths(catalog: EntityCatalog) -> list[str] | None:
    """The store paths others changed between the snapshot `catalog` was loaded from and HEAD
    (their files may differ from what memoryd last wrote), or None when `catalog` was not
    loaded from a snapshot."""
    origin = _origins.get(catalog)
    return None if origin is None or origin.followed is None else list(origin.followed)


def load_snapshot(
    tx: FileTransaction,
    cache_file: Path,
    head: str,
    changed_since: Callable[[str], Sequence[str] | None] | None = None,
) -> EntityCatalog | None:
    """The catalogue of commit `head` from the snapshot next to `cache_file`, or None (see the
    module docstring: the caller vouches that the entity folders are exactly `head`).

    `changed_since(commit)`: the store paths that differ between `commit` and HEAD (None when
    unknown). Given, a snapshot of an earlier commit is brought to `head` by reading again the
    entity folders those paths are in (a person's commit, a pull): at most `_CHANGED_LIMIT`
    of them, and none whose slug another entity shares or without a regular `entity.json`."""
    with long_lived():
        return _load_snapshot(tx, cache_file, head, changed_since)


def _load_snapshot(
    tx: FileTransaction,
    cache_file: Path,
    head: str,
    changed_since: Callable[[str], Sequence[str] | None] | None,
) -> EntityCatalog | None:
    base_file, delta_file = cache_file.with_name(BASE_FILE), cache_file.with_name(DELTA_FILE)
    kept = _take_kept(tx, base_file, delta_file)
    loaded = kept or _from_files(tx, base_file, delta_file)
    if loaded is None:
        return None
    catalog = loaded.catalog
    changed: Sequence[str] = ()
    if loaded.commit != head:
        found = changed_since(loaded.commit) if changed_since is not None else None
        if found is None:
            return None
        changed = found
    try:
        reread = _bring_up_to_date(catalog, changed)
    except (KeyError, TypeError, ValueError, AttributeError):
        log.warning("store.catalog_snapshot_unusable", path=str(base_file))
        return None
    if reread is None:
        return None
    # Folders changed by others cannot be replayed from a delta: the next save writes a base.
    origin = _Origin(base=None) if reread else _Origin(loaded.base, dict(loaded.delta))
    origin.followed = list(changed)
    _origins[catalog] = origin
    log.debug(
        "store.catalog_snapshot_loaded",
        entities=len(catalog),
        replayed=len(loaded.delta),
        reread=reread,
        kept=kept is not None,
    )
    return catalog


def _from_files(tx: FileTransaction, base_file: Path, delta_file: Path) -> _Kept | None:
    """The catalogue the snapshot files hold (the base with the delta replayed), or None."""
    base = _read_base(base_file, tx.root)
    if base is None:
        return None
    delta = _read(delta_file, tx.root)
    replay: dict[str, list[Any]] = {}
    commit = base["commit"]
    if delta is not None and delta.get("base") == base["commit"]:
        replay, commit = delta.get("entities") or {}, delta["commit"]
    try:
        catalog = _catalog(tx, base)
        for kind, slug, archived, document in replay.values():
            entity = entity_from_document(document, kind, slug, archived)
            if entity is None:
                return None
            catalog._taken.add(entity.slug)
            catalog._register(entity)
    except (KeyError, TypeError, ValueError, AttributeError):
        log.warning("store.catalog_snapshot_unusable", path=str(base_file))
        return None
    return _Kept(catalog, str(commit), str(base["commit"]), replay)


def _bring_up_to_date(catalog: EntityCatalog, changed: Sequence[str]) -> int | None:
    """Read again the bucket entries `changed` paths are in; how many, or None when the
    catalogue must be loaded entity by entity instead."""
    names = {found for path in changed if (found := bucket_entry(path)) is not None}
    if len(names) > _CHANGED_LIMIT:
        return None
    root = catalog._tx.root
    for kind, name in sorted(names):
        ref = LAYOUTS[kind].ref_prefix + name
        holder = catalog._by_slug.get(name)
        if holder is not None and holder.ref != ref:
            return None  # a slug two entities share: which one holds it depends on the order
        old = catalog._by_ref.get(ref)
        if old is not None:
            _unregister(catalog, old)
        for archived in (False, True) if _SLUG_SHAPE.match(name) else ():
            folder = entity_folder(kind, name, archived=archived)
            try:
                entity = catalog._read_folder(folder, kind, name, archived)
            except CorruptFileError:
                return None  # the load entity by entity says what is wrong
            if entity is None:
                continue
            if not _regular(root / folder / METADATA_FILE):
                return None  # made by hand or linked: read every time
            holder = catalog._by_slug.get(name)
            if holder is not None and holder.ref != ref:
                return None
            catalog._register(entity)  # the active folder first: an active copy wins
            break
        if any(os.path.lexists(root / bucket / name) for bucket in _buckets(name)):
            catalog._taken.add(name)
        else:
            catalog._taken.discard(name)
    return len(names)


def _buckets(name: str) -> list[str]:
    """The store folders an entry `name` of any bucket (active or archived) would be in."""
    return [
        f"{LIFE}/{ARCHIVES}/{layout.bucket}" if archived else f"{LIFE}/{layout.bucket}"
        for kind, layout in LAYOUTS.items()
        for archived in (False, True)
        if not (kind == "area" and name in _NESTED_BUCKETS)
    ]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _unregister(catalog: EntityCatalog, entity: Entity) -> None:
    """Take `entity` out of every lookup table, as if it had never been registered (the tables
    of a snapshot are those of a fresh load: each label is the entity's own)."""
    ref = entity.ref
    del catalog._by_ref[ref]
    holder = catalog._by_slug.get(entity.slug)
    if holder is not None and holder.ref == ref:
        del catalog._by_slug[entity.slug]
    _discard(catalog._by_name, entity.name, ref)
    for alias in entity.aliases:
        _discard(catalog._by_alias, alias, ref)
    for normalized, look, label_words, normalized_words in label_forms(entity):
        _discard(catalog._by_normalized, normalized, ref)
        _discard(catalog._by_skeleton, look, ref)
        catalog._mentions.remove_words(label_words, ref)
        catalog._mentions.remove_words(normalized_words, ref)


def _discard(table: dict[str, set[str]], label: str, ref: str) -> None:
    refs = table.get(label)
    if refs is not None:
        refs.discard(ref)
        if not refs:
            del table[label]


def save_snapshot(
    catalog: EntityCatalog, cache_file: Path, commit: str, *, keep: bool = False
) -> None:
    """Save `catalog` as the catalogue of `commit`, the commit memoryd just made with every
    change of the catalogue in it; nothing is saved for a catalogue that may not be (see the
    module docstring). A file that cannot be written is logged: only a cache. `keep`: the
    process will load the store's catalogue again (the daemon), so the catalogue is kept for
    that load; a one-shot command keeps nothing it would only carry to its exit."""
    origin = _origins.get(catalog)
    base_file, delta_file = cache_file.with_name(BASE_FILE), cache_file.with_name(DELTA_FILE)
    try:
        if origin is None or not catalog.exact_labels:
            delta_file.unlink(missing_ok=True)  # the next load is entity by entity
            return
        delta = dict(origin.delta)
        for ref in sorted(catalog.changed_refs()):
            entity = catalog.by_ref(ref)
            if entity is not None:
                delta[ref] = [entity.kind, entity.slug, entity.archived, entity_document(entity)]
        if origin.base is None or len(delta) > max(_DELTA_LIMIT, len(catalog) // 10):
            _write_base(base_file, _base_document(catalog, commit))
            delta_file.unlink(missing_ok=True)
            cache_file.with_name(_OLD_BASE_FILE).unlink(missing_ok=True)
            origin.base, delta = commit, {}
        else:
            _write(
                delta_file,
                _header(catalog._tx.root)
                | {"base": origin.base, "commit": commit, "entities": delta},
            )
        origin.delta = delta
        if keep:
            _keep(catalog, commit, origin, (_file_key(base_file), _file_key(delta_file)))
    except (OSError, ValueError) as error:  # ValueError: a trie too deep for marshal
        log.warning("store.catalog_cache_unwritable", path=str(base_file), error=str(error))


# -- the catalogue kept in memory ----------------------------------------------------------------


@dataclass
class _Kept:
    """A catalogue as snapshot files describe it: of commit `commit`, from the base of commit
    `base` with `delta` replayed over it (`files`: the files' keys, for one kept in memory)."""

    catalog: EntityCatalog
    commit: str
    base: str
    delta: dict[str, list[Any]]
    files: tuple[_FileKey | None, _FileKey | None] = (None, None)


_FileKey = tuple[int, int, int, int]
# The catalogue each store's last save left, for the next load in this process (the daemon's
# next heartbeat): it is the catalogue those files hold, so the load takes it instead of
# reading them, as long as they are still the files that save wrote (no other process wrote
# them since: an atomic write makes a new inode). A handful of stores, the oldest dropped.
_kept: dict[Path, _Kept] = {}
_KEPT_STORES = 4


def _keep(
    catalog: EntityCatalog,
    commit: str,
    origin: _Origin,
    files: tuple[_FileKey | None, _FileKey | None],
) -> None:
    root = catalog._tx.root
    _kept.pop(root, None)
    if origin.base is None or files[0] is None:
        return
    while len(_kept) >= _KEPT_STORES:
        del _kept[next(iter(_kept))]
    _kept[root] = _Kept(catalog, commit, origin.base, dict(origin.delta), files)


def _take_kept(tx: FileTransaction, base_file: Path, delta_file: Path) -> _Kept | None:
    """The catalogue this process's last save for the store left, rebound to `tx`, when the
    snapshot files are still the ones that save wrote. Taken, not looked at: the heartbeat
    that takes it changes it, and a later load reads the files unless a save keeps it again."""
    kept = _kept.pop(tx.root, None)
    if kept is None or kept.files != (_file_key(base_file), _file_key(delta_file)):
        return None
    kept.catalog._tx, kept.catalog._changed = tx, set()
    return kept


def _file_key(path: Path) -> _FileKey | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


# -- the files ----------------------------------------------------------------------------------


def _header(root: Path) -> dict[str, Any]:
    return {"version": SNAPSHOT_VERSION, "root": str(root), "probe": probe()}


def _read(path: Path, root: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _of_this_store(document, root)


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(document, ensure_ascii=False, separators=(",", ":")))


def _read_base(path: Path, root: Path) -> dict[str, Any] | None:
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
    return _of_this_store(document, root)


def _of_this_store(document: Any, root: Path) -> dict[str, Any] | None:
    """`document` when it is a snapshot file's of this code and of the store at `root`."""
    if not isinstance(document, dict) or not isinstance(document.get("commit"), str):
        return None
    header = {key: document.get(key) for key in ("version", "root", "probe")}
    return document if header == _header(root) else None


def _write_base(path: Path, document: dict[str, Any]) -> None:
    payload = marshal.dumps(document)
    digest = hashlib.blake2b(payload, digest_size=_DIGEST_SIZE).hexdigest()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, f"{_MAGIC}{digest}\n".encode() + payload)


def _base_document(catalog: EntityCatalog, commit: str) -> dict[str, Any]:
    """The base as `_catalog` reads it back: each entity a tuple of its fields (its creation
    date in ISO form), the tables and the trie as the catalogue holds them."""
    return _header(catalog._tx.root) | {
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
            for e in catalog._by_ref.values()
        ],
        "slugs": {slug: entity.ref for slug, entity in catalog._by_slug.items()},
        "taken": set(catalog._taken),
        "tables": list(_tables(catalog)),
        "mentions": catalog._mentions._root,
    }


def _tables(catalog: EntityCatalog) -> tuple[dict[str, set[str]], ...]:
    return catalog._by_name, catalog._by_alias, catalog._by_normalized, catalog._by_skeleton


def _catalog(tx: FileTransaction, base: dict[str, Any]) -> EntityCatalog:
    """The catalogue the base describes (a file this code wrote: see the module docstring);
    raise KeyError, TypeError or ValueError if it is not shaped as one."""
    catalog = EntityCatalog(tx)
    by_ref = catalog._by_ref
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
    catalog._by_slug = {slug: by_ref[ref] for slug, ref in base["slugs"].items()}
    catalog._taken = base["taken"]
    tables = base["tables"]
    if len(tables) != 4 or not all(type(table) is dict for table in tables):
        raise ValueError("not the catalogue's four label tables")
    catalog._by_name, catalog._by_alias, catalog._by_normalized, catalog._by_skeleton = tables
    catalog._mentions = LabelMatcher(_root=base["mentions"])
    return catalog
