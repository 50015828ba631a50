"""The rules that change an entity's facts (docs/store-format.md, Facts): add, supersede, access
bumps.

Invariants kept here:

- facts are never deleted; a changed fact is superseded (`status`, `supersededBy`), and
  supersession only targets existing, active facts of the same entity: anything else (an unknown
  id, another entity's id, an already superseded fact, the new fact itself) is refused and
  reported back, never touching another entity;
- supersession follows the facts' own dates: a fact that became true before one it names as
  superseded (an old conversation filed late: a backfill, a chunk `memoryd retry` put back) does
  not replace it; it is filed already superseded by it, so the newer truth stays the active one;
- ids are `<slug>-NNN` (at least 3 digits); the next one is the highest so far plus one, so an id
  is never reused, and since slugs are unique store-wide, so are ids. In a store shared by several
  hosts (`host_code` given) ids are `<slug>-<HHHH><NNN>`, numbered in this host's own range, so
  that hosts filing facts about one entity at the same time never give one id twice
  (`memoryd.store.items.next_fact_id`);
- the same statement (compared with `normalize_statement`) is stored once per entity: adding it
  again returns the existing fact. If that twin was superseded and the new statement supersedes
  an active fact, the twin becomes active again (the old truth is true again) and replaces it;
  otherwise the twin is left as it is;
- a new fact starts with `lastAccessed` = the day it is filed (`recorded_at`), or its
  conversation's date if that is later: filing is its first use, so a fact backfilled from old
  history starts hot like any other and then decays unless it is used (its conversation's date is
  its `timestamp` when nothing better is known). Later uses follow the conversations' own dates:
  `lastAccessed` only moves forward.

The file format itself is `memoryd.store.items`. A corrupt file raises CorruptFileError when it is
opened, so nothing here ever overwrites it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date

from memoryd.errors import StoreError
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import Entity
from memoryd.store.items import (
    Fact,
    FactSource,
    next_fact_id,
    parse_items,
    render_items,
    split_fact_id,
)
from memoryd.store.text import normalize_statement, one_line, words
from memoryd.store.vocabulary import CATEGORIES
from memoryd.worktree import FileTransaction

__all__ = [
    "AddOutcome",
    "Fact",
    "FactBook",
    "FactDraft",
    "FactFile",
    "FactSource",
    "InvalidFactError",
    "SupersedeOutcome",
]

MIN_ID_DIGITS = 3


class InvalidFactError(StoreError):
    """A fact to be added is unusable as given (empty text, unknown category)."""


@dataclass(frozen=True)
class FactDraft:
    """A fact the pipeline wants filed, before it has an id."""

    fact: str
    category: str
    timestamp: date  # when it became true, or the conversation's date when unknown
    conversation_date: date  # the date of the conversation it came from
    source: FactSource
    related_entities: Sequence[str] = ()  # refs of other entities
    supersedes: Sequence[str] = ()  # ids the model says this fact replaces


@dataclass(frozen=True)
class SupersedeOutcome:
    superseded: tuple[str, ...] = ()  # ids now superseded by the new fact
    refused: tuple[str, ...] = ()  # ids ignored: unknown, another entity's, inactive, itself


@dataclass(frozen=True)
class AddOutcome:
    """What `FactFile.add` did. `fact` is the stored fact: the new one or its existing twin."""

    fact: Fact
    added: bool
    supersession: SupersedeOutcome = SupersedeOutcome()


class FactFile:
    """The facts of one entity, read once, changed in memory, written back by `save`."""

    def __init__(
        self, tx: FileTransaction, entity: Entity, *, host_code: int | None = None
    ) -> None:
        """Read the entity's items.json (absent = no facts yet). Raise CorruptFileError if it
        does not parse; the file is then never written by this object. `host_code`: this host's
        code in a store shared by several hosts (the id rule in the module docstring)."""
        self._tx = tx
        self._host_code = host_code
        self.entity = entity
        self.path = entity.items_path
        text = tx.read_text(self.path)
        # Errors name the absolute path: that is what an operator can open and fix.
        facts = parse_items(tx.root / self.path, text) if text is not None else []
        self._facts = {fact.id: fact for fact in facts}
        self._by_statement: dict[str, str] = {}
        for fact in facts:
            self._by_statement.setdefault(normalize_statement(fact.fact), fact.id)
        self._changed = False

    @property
    def changed(self) -> bool:
        return self._changed

    def facts(self) -> list[Fact]:
        """Every fact, in id order."""
        return sorted(self._facts.values(), key=lambda fact: _number(fact.id))

    def active(self) -> list[Fact]:
        return [fact for fact in self.facts() if fact.status == "active"]

    def get(self, fact_id: str) -> Fact | None:
        return self._facts.get(fact_id)

    def add(self, draft: FactDraft, *, recorded_at: date) -> AddOutcome:
        """File `draft` (see the module docstring for dedup and supersession) and say what
        happened. Raise InvalidFactError for empty text or an unknown category."""
        text = one_line(draft.fact)
        if not words(text):
            raise InvalidFactError(f"empty fact (no letter or digit) for {self.entity.ref}")
        if draft.category not in CATEGORIES:
            raise InvalidFactError(
                f"unknown fact category {draft.category!r}; expected one of {', '.join(CATEGORIES)}"
            )
        twin_id = self._by_statement.get(normalize_statement(text))
        if twin_id is not None:
            return self._restate(self._facts[twin_id], draft.supersedes)
        fact = Fact(
            id=self._allocate_id(),
            fact=text,
            category=draft.category,
            timestamp=draft.timestamp,
            status="active",
            superseded_by=None,
            related_entities=tuple(
                sorted({ref for ref in draft.related_entities if ref != self.entity.ref})
            ),
            last_accessed=max(draft.conversation_date, recorded_at),
            access_count=0,
            recorded_at=recorded_at,
            source=draft.source,
        )
        self._store(fact)
        self._by_statement[normalize_statement(text)] = fact.id
        named = list(dict.fromkeys(draft.supersedes))
        newer = [
            old
            for old in named
            if self._is_active(old) and self._facts[old].timestamp > fact.timestamp
        ]
        supersession = self.supersede([old for old in named if old not in newer], fact.id)
        if not newer:
            return AddOutcome(fact, added=True, supersession=supersession)
        # An older truth reported late: the newest fact it names stays active and outdates it.
        newest = max(newer, key=lambda old: (self._facts[old].timestamp, _number(old)))
        fact = replace(fact, status="superseded", superseded_by=newest)
        self._store(fact)
        superseded = (*supersession.superseded, fact.id)
        return AddOutcome(
            fact, added=True, supersession=replace(supersession, superseded=superseded)
        )

    def _restate(self, twin: Fact, supersedes: Sequence[str]) -> AddOutcome:
        if twin.status == "active":
            return AddOutcome(twin, added=False, supersession=self.supersede(supersedes, twin.id))
        targets = [t for t in supersedes if t != twin.id and self._is_active(t)]
        if not targets:
            refused = tuple(dict.fromkeys(supersedes))
            return AddOutcome(twin, added=False, supersession=SupersedeOutcome(refused=refused))
        revived = replace(twin, status="active", superseded_by=None)
        self._store(revived)
        return AddOutcome(revived, added=False, supersession=self.supersede(supersedes, twin.id))

    def supersede(self, old_ids: Sequence[str], new_id: str) -> SupersedeOutcome:
        """Mark each active fact of this entity named in `old_ids` as superseded by `new_id`
        (which must be an active fact of this entity); refuse and report every other id."""
        if not self._is_active(new_id):
            raise StoreError(f"{new_id} is not an active fact of {self.entity.ref}")
        superseded: list[str] = []
        refused: list[str] = []
        for old_id in dict.fromkeys(old_ids):
            if old_id == new_id or not self._is_active(old_id):
                refused.append(old_id)
                continue
            self._store(replace(self._facts[old_id], status="superseded", superseded_by=new_id))
            superseded.append(old_id)
        return SupersedeOutcome(tuple(superseded), tuple(refused))

    def bump(self, fact_id: str, on: date) -> Fact | None:
        """Record that a conversation of date `on` used the fact: one more access, and
        `lastAccessed` moves to `on` if that is later. Return the fact, or None if unknown."""
        fact = self._facts.get(fact_id)
        if fact is None:
            return None
        bumped = replace(
            fact, access_count=fact.access_count + 1, last_accessed=max(fact.last_accessed, on)
        )
        self._store(bumped)
        return bumped

    def retract(self, fact_id: str, *, on: date, reason: str) -> Fact:
        """Retract an active or superseded fact (`memoryd forget`): it is kept, with status
        `retracted` and a `retraction` record (date and reason), and leaves summaries and the
        extraction context. Raise StoreError for an unknown or already retracted id."""
        fact = self._facts.get(fact_id)
        if fact is None or fact.status == "retracted":
            state = "unknown" if fact is None else "already retracted"
            raise StoreError(f"{fact_id} is {state} in {self.entity.ref}")
        retraction = {"on": on.isoformat(), "reason": one_line(reason)}
        retracted = replace(
            fact, status="retracted", extra={**fact.extra, "retraction": retraction}
        )
        self._store(retracted)
        return retracted

    def save(self) -> bool:
        """Stage the file if anything changed since it was read; say whether it was staged."""
        if not self._changed:
            return False
        self._tx.write_text(self.path, render_items(self._facts.values()))
        self._changed = False
        return True

    def _is_active(self, fact_id: str) -> bool:
        fact = self._facts.get(fact_id)
        return fact is not None and fact.status == "active"

    def _store(self, fact: Fact) -> None:
        self._facts[fact.id] = fact
        self._changed = True

    def _allocate_id(self) -> str:
        return next_fact_id(self.entity.slug, self._facts, self._host_code)


def _number(fact_id: str) -> tuple[int, int, str]:
    parts = split_fact_id(fact_id)
    return (0, parts[1], fact_id) if parts else (1, 0, fact_id)


class FactBook:
    """The fact files of a whole store within one transaction, opened on demand and cached.

    This is what a heartbeat uses: it finds a fact by id anywhere in the store (for access bumps)
    and saves every changed file at the end, each to its entity's current folder, so a lifecycle
    move made after a file was opened is honoured.
    """

    def __init__(
        self, tx: FileTransaction, catalog: EntityCatalog, *, host_code: int | None = None
    ) -> None:
        self._tx = tx
        self._catalog = catalog
        self._host_code = host_code
        self._files: dict[str, FactFile] = {}

    def file_for(self, entity: Entity) -> FactFile:
        """The fact file of `entity` (opened on first use; CorruptFileError if it is corrupt)."""
        current = self._catalog.by_ref(entity.ref) or entity
        opened = self._files.get(current.ref)
        if opened is None:
            opened = FactFile(self._tx, current, host_code=self._host_code)
            self._files[current.ref] = opened
        # The entity may have moved (archived or back) since the file was opened.
        opened.entity, opened.path = current, current.items_path
        return opened

    def lookup_fact(self, fact_id: str) -> tuple[Entity, Fact] | None:
        """Given a fact id from anywhere (e.g. the model's "accessed" list), return its entity
        and the fact, or None when no entity of the store has that fact."""
        parts = split_fact_id(fact_id)
        entity = self._catalog.by_slug(parts[0]) if parts else None
        if entity is None:
            return None
        fact = self.file_for(entity).get(fact_id)
        return (entity, fact) if fact is not None else None

    def bump(self, fact_id: str, on: date) -> Fact | None:
        """Access bump by id anywhere in the store; None (and nothing changed) if unknown."""
        found = self.lookup_fact(fact_id)
        return self.file_for(found[0]).bump(fact_id, on) if found else None

    def save_all(self) -> list[str]:
        """Stage every changed fact file at its entity's current path; return the paths."""
        saved = []
        for ref in sorted(self._files):
            fact_file = self._files[ref]
            current = self._catalog.by_ref(ref)
            if current is not None:
                fact_file.path = current.items_path
            if fact_file.save():
                saved.append(fact_file.path)
        return saved
