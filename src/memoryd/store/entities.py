"""Entities of the knowledge graph: kinds, refs, folders, metadata and name matching
(docs/store-format.md, Entities).

An entity is a folder under `life/` holding `summary.md`, `items.json` and memoryd's own
metadata, `entity.json` (name, kind, aliases, status, created date). Invariants:

- the folder name is the entity's slug, computed by memoryd from the name, never taken from
  input; the slug never changes, so the ref (`<prefix><slug>`) never changes either;
- the kind decides the bucket folder (`people/` → `life/areas/people/`); an entity whose status
  is not `active` lives under `life/archives/` with the same path below `life/`;
- `entity.json` is pretty JSON with sorted keys and a trailing newline, aliases sorted, so the
  same entity always serializes to the same bytes.

The catalogue that finds, creates and moves entities is `memoryd.store.catalog._catalog`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Final

from memoryd.errors import CorruptFileError, StoreError
from memoryd.store.text import one_line, words
from memoryd.store.vocabulary import KINDS, STATUSES, EntityKind, EntityStatus

LIFE = "life"
ARCHIVES = "archives"
METADATA_FILE = "entity.json"
SUMMARY_FILE = "summary.md"
ITEMS_FILE = "items.json"
# A name is a label, not a document; longer input is almost surely a model or parsing mistake.
MAX_NAME_LENGTH = 200


@dataclass(frozen=True)
class KindLayout:
    """Where entities of one kind live and how their refs and index section are named."""

    kind: EntityKind
    ref_prefix: str
    bucket: str  # folder below life/ (and below life/archives/)
    title: str  # heading of the kind's group in life/index.md


LAYOUTS: Final[dict[EntityKind, KindLayout]] = {
    "person": KindLayout("person", "people/", "areas/people", "People"),
    "company": KindLayout("company", "companies/", "areas/companies", "Companies"),
    "project": KindLayout("project", "projects/", "projects", "Projects"),
    "area": KindLayout("area", "areas/", "areas", "Areas"),
    "resource": KindLayout("resource", "resources/", "resources", "Resources"),
}


class InvalidEntityError(StoreError):
    """An entity request that cannot be honoured as given (bad name, kind or status)."""


@dataclass(frozen=True)
class Entity:
    """One entity as the store knows it. `archived` records where its folder is right now."""

    name: str
    kind: EntityKind
    slug: str
    status: EntityStatus = "active"
    aliases: tuple[str, ...] = ()
    created: date | None = None
    archived: bool = False
    # Keys of entity.json memoryd does not know (written by a newer memoryd or a person): kept.
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def ref(self) -> str:
        return LAYOUTS[self.kind].ref_prefix + self.slug

    @property
    def folder(self) -> str:
        return entity_folder(self.kind, self.slug, archived=self.archived)

    @property
    def summary_path(self) -> str:
        return f"{self.folder}/{SUMMARY_FILE}"

    @property
    def items_path(self) -> str:
        return f"{self.folder}/{ITEMS_FILE}"

    @property
    def metadata_path(self) -> str:
        return f"{self.folder}/{METADATA_FILE}"

    @property
    def names(self) -> tuple[str, ...]:
        """The name followed by the aliases: every label the entity is known by."""
        return (self.name, *self.aliases)


def entity_folder(kind: EntityKind, slug: str, *, archived: bool) -> str:
    """Store-relative folder of an entity of `kind` with `slug`."""
    bucket = LAYOUTS[kind].bucket
    return f"{LIFE}/{ARCHIVES}/{bucket}/{slug}" if archived else f"{LIFE}/{bucket}/{slug}"


def check_kind(kind: str) -> EntityKind:
    """Return `kind` as an EntityKind; raise InvalidEntityError if it is not one."""
    for known in KINDS:
        if kind == known:
            return known
    raise InvalidEntityError(f"unknown entity kind {kind!r}; expected one of {', '.join(KINDS)}")


def check_status(status: str) -> EntityStatus:
    """Return `status` as an EntityStatus; raise InvalidEntityError if it is not one."""
    for known in STATUSES:
        if status == known:
            return known
    raise InvalidEntityError(
        f"unknown entity status {status!r}; expected one of {', '.join(STATUSES)}"
    )


def clean_name(name: str) -> str:
    """Return the name as stored: one line, trimmed. Raise InvalidEntityError if it is empty,
    has no letter or digit, or is longer than MAX_NAME_LENGTH."""
    cleaned = one_line("".join(ch if ch.isprintable() else " " for ch in name))
    if not words(cleaned):
        raise InvalidEntityError(f"entity name {name[:80]!r} has no letter or digit")
    if len(cleaned) > MAX_NAME_LENGTH:
        raise InvalidEntityError(
            f"entity name of {len(cleaned)} characters is longer than {MAX_NAME_LENGTH}: "
            f"{cleaned[:80]!r}…"
        )
    return cleaned


# Legal-form words dropped from the end of a name before comparing ("Acme Inc." = "Acme").
COMPANY_SUFFIXES: Final = frozenset(
    {
        "inc",
        "incorporated",
        "ltd",
        "limited",
        "llc",
        "llp",
        "lp",
        "gmbh",
        "corp",
        "corporation",
        "co",
        "company",
        "plc",
        "ag",
        "sa",
        "sas",
        "sarl",
        "srl",
        "spa",
        "bv",
        "nv",
        "oy",
        "ab",
        "kg",
        "pty",
    }
)


def normalize_name(name: str) -> str:
    """The form two names are compared in by the last step of entity resolution.

    Accents and case are folded, punctuation dropped, runs of single letters joined ("L.L.C." →
    "llc", "J. R. R." → "jrr") and legal-form suffixes removed from the end while a word stays.
    """
    merged: list[str] = []
    run = ""
    for word in words(name):
        if len(word) == 1 and word.isalpha():
            run += word
            continue
        if run:
            merged.append(run)
            run = ""
        merged.append(word)
    if run:
        merged.append(run)
    while len(merged) > 1 and merged[-1] in COMPANY_SUFFIXES:
        merged.pop()
    return " ".join(merged)


def render_metadata(entity: Entity) -> str:
    """entity.json for `entity`: pretty JSON, sorted keys, trailing newline."""
    document: dict[str, Any] = dict(entity.extra)
    document.update(
        name=entity.name,
        kind=entity.kind,
        aliases=sorted(set(entity.aliases)),
        status=entity.status,
    )
    if entity.created is not None:
        document["created"] = entity.created.isoformat()
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_KNOWN_KEYS = frozenset({"name", "kind", "aliases", "status", "created"})


def parse_metadata(path: Path, text: str, *, kind: EntityKind, slug: str, archived: bool) -> Entity:
    """Read entity.json of the folder `slug` in the bucket of `kind`.

    The folder decides kind and slug (they make the ref, which never changes); the file gives
    name, aliases, status and created date. Raise CorruptFileError if the file does not parse
    or a field has the wrong shape.
    """

    def corrupt(reason: str) -> CorruptFileError:
        return CorruptFileError(path, reason)

    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise corrupt(f"not valid JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(document, dict):
        raise corrupt("expected a JSON object")
    name = document.get("name")
    if not isinstance(name, str) or not words(name):
        raise corrupt("'name' must be a non-empty string")
    aliases = document.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise corrupt("'aliases' must be a list of strings")
    status = document.get("status", "active")
    if status not in STATUSES:
        raise corrupt(f"'status' must be one of {', '.join(STATUSES)}")
    created_text = document.get("created")
    created = None
    if created_text is not None:
        try:
            created = date.fromisoformat(str(created_text))
        except ValueError:
            raise corrupt("'created' must be a YYYY-MM-DD date") from None
    return Entity(
        name=name,
        kind=kind,
        slug=slug,
        status=check_status(status),
        aliases=tuple(sorted(set(aliases))),
        created=created,
        archived=archived,
        extra={k: v for k, v in document.items() if k not in _KNOWN_KEYS},
    )
