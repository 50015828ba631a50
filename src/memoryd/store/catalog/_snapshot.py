"""The entity catalogue saved whole at a commit, so that a heartbeat on a store nobody else
changed loads it without a step per entity.

`memoryd.store.catalog._cache` still answers entity by entity (an `lstat` of each `entity.json`,
then the entity and its label forms registered one at a time): on a store of 5,000 entities
that is most of a heartbeat's extra cost. A snapshot instead keeps the catalogue's lookup tables
as they are (entities, slugs, the label tables and the mention trie), keyed by the git commit
they describe, in two files of the state directory next to the cache (their formats:
`memoryd.store.catalog._snapshot_files`): the base, every table at a commit B, and the delta,
the entities memoryd created or changed in its commits since B, at their state of commit H
(the last heartbeat's commit), so that a heartbeat rewrites a few entities, not the whole base.
When the delta grows past `_DELTA_LIMIT` entities (or a tenth of the store) the base is
written again.

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

import os
import stat
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from memoryd.collector import long_lived
from memoryd.errors import CorruptFileError
from memoryd.store.catalog._catalog import EntityCatalog
from memoryd.store.catalog._layout import NESTED_BUCKETS, SLUG_SHAPE, bucket_entry
from memoryd.store.catalog._snapshot_files import (
    BASE_FILE,
    DELTA_FILE,
    OLD_BASE_FILE,
    FileKey,
    base_document,
    catalog_from_base,
    entity_document,
    entity_from_document,
    header,
    read_base,
    read_delta,
    stat_key,
    write_base,
    write_delta,
)
from memoryd.store.entities import (
    ARCHIVES,
    LAYOUTS,
    LIFE,
    METADATA_FILE,
    entity_folder,
)
from memoryd.worktree import FileTransaction

log = structlog.get_logger("memoryd.store.catalog_snapshot")  # the name its events always had

_DELTA_LIMIT = 500
_CHANGED_LIMIT = 200  # bucket entries changed by others read again; more: entity by entity


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
    base = read_base(base_file, tx.root)
    if base is None:
        return None
    delta = read_delta(delta_file, tx.root)
    replay: dict[str, list[Any]] = {}
    commit = base["commit"]
    if delta is not None and delta.get("base") == base["commit"]:
        replay, commit = delta.get("entities") or {}, delta["commit"]
    try:
        catalog = catalog_from_base(tx, base)
        for kind, slug, archived, document in replay.values():
            entity = entity_from_document(document, kind, slug, archived)
            if entity is None:
                return None
            catalog.set_taken(entity.slug, True)
            catalog.register(entity)
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
    root = catalog.root
    for kind, name in sorted(names):
        ref = LAYOUTS[kind].ref_prefix + name
        holder = catalog.by_slug(name)
        if holder is not None and holder.ref != ref:
            return None  # a slug two entities share: which one holds it depends on the order
        old = catalog.by_ref(ref)
        if old is not None:
            catalog.forget(old)
        for archived in (False, True) if SLUG_SHAPE.match(name) else ():
            folder = entity_folder(kind, name, archived=archived)
            try:
                entity = catalog.read_folder(folder, kind, name, archived)
            except CorruptFileError:
                return None  # the load entity by entity says what is wrong
            if entity is None:
                continue
            if not _regular(root / folder / METADATA_FILE):
                return None  # made by hand or linked: read every time
            holder = catalog.by_slug(name)
            if holder is not None and holder.ref != ref:
                return None
            catalog.register(entity)  # the active folder first: an active copy wins
            break
        catalog.set_taken(name, any(os.path.lexists(root / b / name) for b in _buckets(name)))
    return len(names)


def _buckets(name: str) -> list[str]:
    """The store folders an entry `name` of any bucket (active or archived) would be in."""
    return [
        f"{LIFE}/{ARCHIVES}/{layout.bucket}" if archived else f"{LIFE}/{layout.bucket}"
        for kind, layout in LAYOUTS.items()
        for archived in (False, True)
        if not (kind == "area" and name in NESTED_BUCKETS)
    ]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


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
            write_base(base_file, base_document(catalog, commit))
            delta_file.unlink(missing_ok=True)
            cache_file.with_name(OLD_BASE_FILE).unlink(missing_ok=True)
            origin.base, delta = commit, {}
        else:
            write_delta(
                delta_file,
                header(catalog.root) | {"base": origin.base, "commit": commit, "entities": delta},
            )
        origin.delta = delta
        if keep:
            _keep(catalog, commit, origin, (stat_key(base_file), stat_key(delta_file)))
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
    files: tuple[FileKey | None, FileKey | None] = (None, None)


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
    files: tuple[FileKey | None, FileKey | None],
) -> None:
    root = catalog.root
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
    if kept is None or kept.files != (stat_key(base_file), stat_key(delta_file)):
        return None
    kept.catalog.rebind(tx)
    return kept
