"""The `items.json` file format of docs/store-format.md, Facts: facts as data, parsed and rendered.

`items.json` is a JSON array, indent 2, UTF-8 (not ASCII-escaped), sorted by id in numeric order,
each fact's keys in the documented order (unknown keys kept, after them, sorted), trailing newline.
Rendering is deterministic:
the same facts give the same bytes. Parsing is strict about shape (a fact missing a field, a
field of the wrong type, a duplicate id) and raises CorruptFileError naming the file, so that a
damaged file is reported and left alone rather than "repaired" by overwriting it. The rules that
change facts live in `memoryd.store.facts`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from memoryd.errors import CorruptFileError

FactStatus = Literal["active", "superseded", "retracted"]  # retracted: `memoryd forget`

# Ends at "\Z": "$" also matches before a final newline ("acme\n").
_ID = re.compile(r"^(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<number>[0-9]{3,})\Z")
_KEY_ORDER: Final = (
    "id",
    "fact",
    "category",
    "timestamp",
    "status",
    "supersededBy",
    "relatedEntities",
    "lastAccessed",
    "accessCount",
    "recordedAt",
    "source",
)


@dataclass(frozen=True)
class FactSource:
    """Provenance of a fact: the agent, session, transcript file and its line range."""

    agent: str
    session: str
    file: str
    lines: tuple[int, int]
    locator: str | None = None  # for formats that are not line-based (see sources.model)


@dataclass(frozen=True)
class Fact:
    id: str
    fact: str
    category: str
    timestamp: date
    status: FactStatus
    superseded_by: str | None
    related_entities: tuple[str, ...]
    last_accessed: date
    access_count: int
    recorded_at: date
    source: FactSource
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


# Fact ids (docs/store-format.md, Facts) are `<entity-slug>-<digits>`. A store used by one host
# numbers each
# entity's facts 001, 002, ... (`<slug>-NNN`, the highest short number + 1). A store shared by
# several hosts (`git.push`) must not let two hosts give one id to different facts, and has no
# coordinator: each host numbers its facts in its own range, `<slug>-<HHHH><NNN>`, HHHH being a
# four-digit code derived from the host's name (`host_id_code`) and NNN the host's own sequence
# for that entity (3 digits or more). Both forms are `<slug>-<digits>`: every id ever given stays
# valid and parses the same way; short numbers (under HOST_ID_DIGITS + 3 digits) are the first
# form, longer ones the second.
HOST_CODE_DIGITS: Final = 4
SEQUENCE_DIGITS: Final = 3
_HOST_CODE_FLOOR: Final = 10 ** (HOST_CODE_DIGITS - 1)


def host_id_code(host: str) -> int:
    """The four-digit code (1000-9999) of a host's fact ids, derived from its name alone."""
    digest = hashlib.sha256(host.encode("utf-8")).digest()
    span = 10**HOST_CODE_DIGITS - _HOST_CODE_FLOOR
    return _HOST_CODE_FLOOR + int.from_bytes(digest[:8], "big") % span


def next_fact_id(slug: str, taken: Iterable[str], host_code: int | None = None) -> str:
    """The next free id of an entity whose ids `taken` are: `<slug>-NNN` after the highest short
    number, or with `host_code`, `<slug>-<code><NNN>` after that host's highest sequence."""
    taken = set(taken)
    numbers = [
        match["number"]
        for match in map(_ID.match, taken)
        if match is not None and match["slug"] == slug
    ]
    width = HOST_CODE_DIGITS + SEQUENCE_DIGITS
    if host_code is None:
        short = [int(number) for number in numbers if len(number) < width]
        candidate = max(short, default=0) + 1
        while f"{slug}-{candidate:0{SEQUENCE_DIGITS}d}" in taken:
            candidate += 1
        return f"{slug}-{candidate:0{SEQUENCE_DIGITS}d}"
    code = str(host_code)
    own = [int(n[len(code) :]) for n in numbers if len(n) >= width and n.startswith(code)]
    sequence = max(own, default=0) + 1
    while f"{slug}-{code}{sequence:0{SEQUENCE_DIGITS}d}" in taken:
        sequence += 1
    return f"{slug}-{code}{sequence:0{SEQUENCE_DIGITS}d}"


def host_code_of(fact_id: str) -> int | None:
    """The host code of an id given by a host of a shared store, or None for a short id."""
    match = _ID.match(fact_id)
    if match is None or len(match["number"]) < HOST_CODE_DIGITS + SEQUENCE_DIGITS:
        return None
    return int(match["number"][:HOST_CODE_DIGITS])


def split_fact_id(fact_id: str) -> tuple[str, int] | None:
    """Given a fact id, return (entity slug, number), or None if it has not the id shape."""
    match = _ID.match(fact_id)
    return (match["slug"], int(match["number"])) if match else None


def _sort_key(fact_id: str) -> tuple[int, str, int]:
    parts = split_fact_id(fact_id)
    return (0, parts[0], parts[1]) if parts else (1, fact_id, 0)


# --- the file format ---------------------------------------------------------------------------


def render_items(facts: Iterable[Fact]) -> str:
    """The bytes-stable text of an items.json holding `facts`."""
    ordered = sorted(facts, key=lambda fact: _sort_key(fact.id))
    return json.dumps([_fact_to_json(f) for f in ordered], indent=2, ensure_ascii=False) + "\n"


def _fact_to_json(fact: Fact) -> dict[str, Any]:
    source: dict[str, Any] = {
        "agent": fact.source.agent,
        "session": fact.source.session,
        "file": fact.source.file,
        "lines": list(fact.source.lines),
    }
    if fact.source.locator is not None:
        source["locator"] = fact.source.locator
    document: dict[str, Any] = {
        "id": fact.id,
        "fact": fact.fact,
        "category": fact.category,
        "timestamp": fact.timestamp.isoformat(),
        "status": fact.status,
        "supersededBy": fact.superseded_by,
        "relatedEntities": list(fact.related_entities),
        "lastAccessed": fact.last_accessed.isoformat(),
        "accessCount": fact.access_count,
        "recordedAt": fact.recorded_at.isoformat(),
        "source": source,
    }
    for key in sorted(fact.extra):
        document[key] = fact.extra[key]
    return document


def parse_items(path: Path, text: str) -> list[Fact]:
    """Parse an items.json. Raise CorruptFileError (naming `path`) for invalid JSON, a document
    that is not a list, a fact of the wrong shape or a duplicate id."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise CorruptFileError(
            path, f"not valid JSON ({error.msg} at line {error.lineno})"
        ) from None
    if not isinstance(document, list):
        raise CorruptFileError(path, "expected a JSON array of facts")
    facts: list[Fact] = []
    seen: set[str] = set()
    for position, item in enumerate(document):
        try:
            fact = _fact_from_json(item)
        except (TypeError, ValueError, KeyError) as error:
            raise CorruptFileError(path, f"fact #{position + 1}: {error}") from None
        if fact.id in seen:
            raise CorruptFileError(path, f"fact #{position + 1}: duplicate id {fact.id}")
        seen.add(fact.id)
        facts.append(fact)
    return facts


def _fact_from_json(item: object) -> Fact:
    if not isinstance(item, dict):
        raise TypeError("expected a JSON object")
    source = _require(item, "source", dict)
    lines = _require(source, "lines", list)
    if len(lines) != 2 or not all(type(n) is int for n in lines):
        raise ValueError("'source.lines' must be two integers")
    locator = source.get("locator")
    if locator is not None and not isinstance(locator, str):
        raise TypeError("'source.locator' must be a string")
    status = _require(item, "status", str)
    if status not in ("active", "superseded", "retracted"):
        raise ValueError("'status' must be 'active', 'superseded' or 'retracted'")
    superseded_by = item.get("supersededBy")
    if superseded_by is not None and not isinstance(superseded_by, str):
        raise TypeError("'supersededBy' must be a string or null")
    related = _require(item, "relatedEntities", list)
    if not all(isinstance(ref, str) for ref in related):
        raise TypeError("'relatedEntities' must be a list of strings")
    count = _require(item, "accessCount", int)
    if count < 0:
        raise ValueError("'accessCount' must not be negative")
    return Fact(
        id=_require(item, "id", str),
        fact=_require(item, "fact", str),
        category=_require(item, "category", str),
        timestamp=_date(item, "timestamp"),
        status=_STATUSES[status],
        superseded_by=superseded_by,
        related_entities=tuple(related),
        last_accessed=_date(item, "lastAccessed"),
        access_count=count,
        recorded_at=_date(item, "recordedAt"),
        source=FactSource(
            agent=_require(source, "agent", str),
            session=_require(source, "session", str),
            file=_require(source, "file", str),
            lines=(lines[0], lines[1]),
            locator=locator,
        ),
        extra={key: value for key, value in item.items() if key not in _KEY_ORDER},
    )


_STATUSES: Final[dict[str, FactStatus]] = {
    "active": "active",
    "superseded": "superseded",
    "retracted": "retracted",
}
_T = TypeVar("_T")


def _require(mapping: dict[str, Any], key: str, kind: type[_T]) -> _T:
    value = mapping.get(key)
    # bool is an int to Python but not a count to anyone reading the file.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"'{key}' must be a {kind.__name__}")
    return value


def _date(mapping: dict[str, Any], key: str) -> date:
    value = _require(mapping, key, str)
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"'{key}' must be a YYYY-MM-DD date") from None
