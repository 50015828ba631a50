"""The entity catalogue: every entity in the store, found by ref, slug, name, alias or mention.

`EntityCatalog.load` reads the tree once (active buckets and `life/archives/`); afterwards the
catalogue is the single writer of entity folders within a transaction, so its in-memory view and
the transaction stay in step. Invariants:

- one slug namespace across kinds and across archived and active folders: a new entity never
  gets a slug any folder in a bucket already uses; a clash is resolved with `-2`, `-3`, …;
- resolution is exact name, then exact alias, then normalized name (`normalize_name`), each
  step optionally restricted to one kind; ties go to active entities, then the smallest ref;
- refs resolve whether or not the entity is archived; names and aliases are only ever added,
  so the mention index grows in place and never needs a rebuild.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

import structlog

from memoryd.store.catalog._labels import LabelForms, LabelMatcher, label_forms, label_look
from memoryd.store.catalog._layout import NESTED_BUCKETS, SLUG_SHAPE
from memoryd.store.entities import (
    ARCHIVES,
    ITEMS_FILE,
    LAYOUTS,
    LIFE,
    MAX_NAME_LENGTH,
    METADATA_FILE,
    SUMMARY_FILE,
    Entity,
    InvalidEntityError,
    check_kind,
    check_status,
    clean_name,
    normalize_name,
    parse_metadata,
    render_metadata,
)
from memoryd.store.text import one_line, words
from memoryd.store.vocabulary import KINDS, EntityKind
from memoryd.worktree import MAX_SLUG_LENGTH, FileTransaction, slugify

log = structlog.get_logger("memoryd.store.catalog")  # the name its events always had

# Reads one entity folder: (store-relative folder, kind, slug, archived) -> entity or None.
FolderReader = Callable[[str, EntityKind, str, bool], "Entity | None"]


@dataclass
class CatalogTables:
    """The catalogue's lookup tables, shared rather than copied: what its snapshot writes and
    reads back, so that a load from the snapshot does not build them again."""

    by_ref: dict[str, Entity]
    by_slug: dict[str, Entity]
    taken: set[str]
    labels: tuple[dict[str, set[str]], ...]  # by name, alias, normalized name, skeleton
    mentions: LabelMatcher[str]


class EntityCatalog:
    """All entities of the store, with lookups and the operations that create or move them."""

    def __init__(self, tx: FileTransaction) -> None:
        """An empty catalogue over `tx`; use `EntityCatalog.load` to read the store's entities."""
        self._tx = tx
        self._by_ref: dict[str, Entity] = {}
        self._by_slug: dict[str, Entity] = {}
        self._taken: set[str] = set()
        self._by_name: dict[str, set[str]] = {}
        self._by_alias: dict[str, set[str]] = {}
        self._by_normalized: dict[str, set[str]] = {}
        self._by_skeleton: dict[str, set[str]] = {}
        self._mentions: LabelMatcher[str] = LabelMatcher()
        self._changed: set[str] = set()  # refs created or changed since the load
        # False once an entity found changed on disk was registered over its loaded self: the
        # tables (labels only grow) may then hold labels a fresh load would not.
        self.exact_labels = True

    @classmethod
    def load(
        cls,
        tx: FileTransaction,
        read_folder: FolderReader | None = None,
        forms: Callable[[Entity], list[LabelForms] | None] | None = None,
    ) -> EntityCatalog:
        """Read every entity folder of the store (archives included).

        A folder with `entity.json` gives its metadata; a folder with only `summary.md` or
        `items.json` (made by hand) is taken as an active entity named after its summary heading
        or its folder. Raise CorruptFileError if an `entity.json` does not parse. `read_folder`
        replaces the reading of one folder (`memoryd.store.catalog._cache` answers from a cache)
        and `forms` gives an entity's `label_forms` when they are known.
        """
        catalog = cls(tx)
        read = read_folder or catalog.read_folder
        for archived in (False, True):
            base = f"{LIFE}/{ARCHIVES}" if archived else LIFE
            for kind in KINDS:
                bucket = f"{base}/{LAYOUTS[kind].bucket}"
                for name in tx.list_dir(bucket):
                    if name.startswith(".") or (kind == "area" and name in NESTED_BUCKETS):
                        continue
                    catalog._taken.add(name)
                    if SLUG_SHAPE.match(name):
                        entity = read(f"{bucket}/{name}", kind, name, archived)
                        # A ref found both active and archived (a hand-made copy): active wins.
                        if entity is not None and entity.ref not in catalog._by_ref:
                            catalog.register(entity, forms(entity) if forms else None)
        return catalog

    def read_folder(
        self, folder: str, kind: EntityKind, slug: str, archived: bool
    ) -> Entity | None:
        """The entity in one store folder, read as `load` reads it, or None when it holds none."""
        metadata = self._tx.read_text(f"{folder}/{METADATA_FILE}")
        if metadata is not None:
            # Errors name the absolute path: that is what an operator can open and fix.
            where = self._tx.root / folder / METADATA_FILE
            return parse_metadata(where, metadata, kind=kind, slug=slug, archived=archived)
        summary = self._tx.read_text(f"{folder}/{SUMMARY_FILE}")
        if summary is None and not self._tx.exists(f"{folder}/{ITEMS_FILE}"):
            return None
        heading = next(
            (line[2:].strip() for line in (summary or "").splitlines() if line.startswith("# ")),
            "",
        )
        name = heading if words(heading) and len(heading) <= MAX_NAME_LENGTH else slug
        return Entity(name=name, kind=kind, slug=slug, archived=archived)

    # --- lookups -------------------------------------------------------------------------------

    def entities(self) -> list[Entity]:
        """Every entity, sorted by ref."""
        return [self._by_ref[ref] for ref in sorted(self._by_ref)]

    def __len__(self) -> int:
        return len(self._by_ref)

    def by_ref(self, ref: str) -> Entity | None:
        """The entity with `ref` (e.g. `people/jane-doe`), archived or not."""
        return self._by_ref.get(ref)

    def by_slug(self, slug: str) -> Entity | None:
        """The entity whose folder is named `slug`, of whatever kind."""
        return self._by_slug.get(slug)

    def resolve(self, name: str, kind: str | None = None) -> Entity | None:
        """Given a name as the LLM or a transcript spells it, return the entity it means, or None.

        Tries the exact name, then the exact aliases, then the normalized name against every
        name and alias, and last the look-alike skeleton (`memoryd.charsafe.skeleton`: "Acme"
        spelt with a Cyrillic a and es is the Latin "Acme"), which is logged
        (`entity.lookalike_resolved`);
        with `kind`, only entities of that kind count.
        """
        wanted_kind = check_kind(kind) if kind is not None else None
        label = one_line(name)
        for table, key in (
            (self._by_name, label),
            (self._by_alias, label),
            (self._by_normalized, normalize_name(label)),
            (self._by_skeleton, label_look(label)),
        ):
            candidates = [
                self._by_ref[ref]
                for ref in table.get(key, ())
                if wanted_kind is None or self._by_ref[ref].kind == wanted_kind
            ]
            if candidates:
                found = min(candidates, key=lambda entity: (entity.archived, entity.ref))
                if table is self._by_skeleton:
                    log.info("entity.lookalike_resolved", name=label, ref=found.ref)
                return found
        return None

    def changed_refs(self) -> set[str]:
        """Refs of the entities created or changed through this catalogue since it was loaded,
        or found changed on disk when about to be changed (`life/index.md` re-reads these)."""
        return set(self._changed)

    def mentioned_in(self, text: str) -> list[Entity]:
        """Entities whose name, an alias or normalized name occurs in `text` as whole words
        (case- and accent-insensitive), sorted by ref."""
        return [self._by_ref[ref] for ref in sorted(self._mentions.find(text))]

    # --- changes -------------------------------------------------------------------------------

    def create(
        self,
        name: str,
        kind: str,
        aliases: Iterable[str] = (),
        *,
        today: date,
        status: str = "active",
    ) -> Entity:
        """Create a new entity folder and return the entity.

        Writes `entity.json`, an empty `items.json` and a placeholder `summary.md`. The slug is
        computed from the name and made unique across the store. Does not look for an existing
        entity first: call `resolve` for that. Raise InvalidEntityError for an unusable name,
        kind or status.
        """
        checked_kind = check_kind(kind)
        checked_status = check_status(status)
        cleaned = clean_name(name)
        lookalikes = sorted(self._by_skeleton.get(label_look(cleaned), ()))
        if lookalikes:
            # Another kind's entity looks the same (same-kind look-alikes resolve to it): the
            # operator should know that two lines of the index will read alike.
            log.warning("entity.lookalike_created", name=cleaned, kind=kind, lookalikes=lookalikes)
        entity = Entity(
            name=cleaned,
            kind=checked_kind,
            slug=self._allocate_slug(cleaned),
            status=checked_status,
            aliases=_clean_aliases(aliases, cleaned),
            created=today,
            archived=checked_status != "active",
        )
        self._tx.write_text(entity.metadata_path, render_metadata(entity))
        self._tx.write_text(entity.items_path, "[]\n")
        self._tx.write_text(entity.summary_path, f"# {entity.name}\n")
        self._taken.add(entity.slug)
        self.register(entity)
        self._changed.add(entity.ref)
        return entity

    def add_aliases(self, entity: Entity, aliases: Iterable[str]) -> Entity:
        """Add `aliases` to the entity (unusable ones and the name itself are dropped) and return
        the updated entity; writes `entity.json` only if something was added."""
        current = self._current(entity)
        merged = _clean_aliases((*current.aliases, *aliases), current.name)
        if merged == current.aliases:
            return current
        updated = replace(current, aliases=merged)
        self._tx.write_text(updated.metadata_path, render_metadata(updated))
        self.register(updated)
        self._changed.add(updated.ref)
        return updated

    def set_status(self, entity: Entity, status: str) -> Entity:
        """Record the entity's lifecycle status and return the updated entity.

        `completed` and `inactive` move the folder under `life/archives/` (same path below
        `life/`), `active` moves it back; the ref is unchanged. Nothing is written when the
        status is already the one given. Raise StoreError (from the transaction) when a folder
        already occupies the destination, e.g. a hand-made copy; nothing is moved then.
        """
        current = self._current(entity)
        checked = check_status(status)
        if checked == current.status and current.archived == (checked != "active"):
            return current
        updated = replace(current, status=checked, archived=checked != "active")
        if updated.folder != current.folder:
            self._tx.move_dir(current.folder, updated.folder)
        self._tx.write_text(updated.metadata_path, render_metadata(updated))
        self.register(updated)
        self._changed.add(updated.ref)
        return updated

    # --- for the snapshot (`memoryd.store.catalog._snapshot`) ----------------------------------

    @property
    def root(self) -> Path:
        """The store folder the catalogue describes."""
        return self._tx.root

    def export_tables(self) -> CatalogTables:
        """The lookup tables as the catalogue holds them, for the snapshot to write."""
        labels = (self._by_name, self._by_alias, self._by_normalized, self._by_skeleton)
        return CatalogTables(self._by_ref, self._by_slug, self._taken, labels, self._mentions)

    @classmethod
    def from_tables(cls, tx: FileTransaction, tables: CatalogTables) -> EntityCatalog:
        """A catalogue over `tx` holding `tables` (a snapshot read back), nothing changed."""
        catalog = cls(tx)
        catalog._by_ref, catalog._by_slug = tables.by_ref, tables.by_slug
        catalog._taken, catalog._mentions = tables.taken, tables.mentions
        by_name, by_alias, by_normalized, by_skeleton = tables.labels
        catalog._by_name, catalog._by_alias = by_name, by_alias
        catalog._by_normalized, catalog._by_skeleton = by_normalized, by_skeleton
        return catalog

    def rebind(self, tx: FileTransaction) -> None:
        """Serve a later transaction with nothing changed yet (a catalogue kept between runs)."""
        self._tx, self._changed = tx, set()

    def set_taken(self, slug: str, taken: bool) -> None:
        """Record whether a bucket entry named `slug` exists: a new entity never takes its name."""
        if taken:
            self._taken.add(slug)
        else:
            self._taken.discard(slug)

    def forget(self, entity: Entity) -> None:
        """Take `entity` out of every lookup table, as if it had never been registered (the
        tables of a snapshot are those of a fresh load: each label is the entity's own)."""
        ref = entity.ref
        del self._by_ref[ref]
        holder = self._by_slug.get(entity.slug)
        if holder is not None and holder.ref == ref:
            del self._by_slug[entity.slug]
        _discard(self._by_name, entity.name, ref)
        for alias in entity.aliases:
            _discard(self._by_alias, alias, ref)
        for normalized, look, label_words, normalized_words in label_forms(entity):
            _discard(self._by_normalized, normalized, ref)
            _discard(self._by_skeleton, look, ref)
            self._mentions.remove_words(label_words, ref)
            self._mentions.remove_words(normalized_words, ref)

    # --- internals -----------------------------------------------------------------------------

    def _current(self, entity: Entity) -> Entity:
        current = self._by_ref.get(entity.ref)
        if current is None:
            raise InvalidEntityError(f"{entity.ref} is not an entity of this store")
        # Read the folder through the transaction before changing it: an entity loaded from a
        # cache was never read, and the transaction must know what it is about to overwrite.
        found = self.read_folder(current.folder, current.kind, current.slug, current.archived)
        if found is not None and (found != current or found.extra != current.extra):
            self.register(found)
            self._changed.add(found.ref)
            self.exact_labels = False
            current = found
        return current

    def _allocate_slug(self, name: str) -> str:
        base = slugify(name)
        candidate, number = base, 1
        while candidate in self._taken:
            number += 1
            suffix = f"-{number}"
            candidate = base[: MAX_SLUG_LENGTH - len(suffix)].rstrip("-") + suffix
        return candidate

    def register(self, entity: Entity, forms: list[LabelForms] | None = None) -> None:
        """Add or replace `entity` in every lookup table. Labels only grow, so nothing is
        removed from the name tables when an entity is replaced by its updated self. `forms`:
        the entity's `label_forms`, when known."""
        holder = self._by_slug.get(entity.slug)
        # Two hand-made folders of different kinds may share a slug; the first one read keeps it.
        if holder is None or holder.ref == entity.ref:
            self._by_slug[entity.slug] = entity
        self._by_ref[entity.ref] = entity
        self._by_name.setdefault(entity.name, set()).add(entity.ref)
        for alias in entity.aliases:
            self._by_alias.setdefault(alias, set()).add(entity.ref)
        if forms is None or len(forms) != len(entity.names):
            forms = label_forms(entity)
        for normalized, look, label_words, normalized_words in forms:
            self._by_normalized.setdefault(normalized, set()).add(entity.ref)
            self._by_skeleton.setdefault(look, set()).add(entity.ref)
            self._mentions.add_words(label_words, entity.ref)
            self._mentions.add_words(normalized_words, entity.ref)


def _discard(table: dict[str, set[str]], label: str, ref: str) -> None:
    refs = table.get(label)
    if refs is not None:
        refs.discard(ref)
        if not refs:
            del table[label]


def _clean_aliases(aliases: Iterable[str], name: str) -> tuple[str, ...]:
    cleaned = set()
    for alias in aliases:
        try:
            label = clean_name(alias)
        except InvalidEntityError:
            continue
        if label != name:
            cleaned.add(label)
    return tuple(sorted(cleaned))


def entity_at(tx: FileTransaction, folder: str) -> Entity | None:
    """The entity whose folder is `folder` (store-relative, as `Entity.folder` gives it), read
    as `EntityCatalog.load` reads it, or None when `folder` is no entity's. One entity without
    loading the whole catalogue (readers that know a path). Raise CorruptFileError as `load`."""
    parts = folder.split("/")
    archived = len(parts) > 2 and parts[1] == ARCHIVES
    bucket = "/".join(parts[2 if archived else 1 : -1])
    if parts[0] != LIFE or len(parts) < 3 or not SLUG_SHAPE.match(parts[-1]):
        return None
    for kind in KINDS:
        if LAYOUTS[kind].bucket == bucket:
            return EntityCatalog(tx).read_folder(folder, kind, parts[-1], archived)
    return None
