"""The review queue: skill tips and tacit lines the safety gate held back.

A held item is one JSON file in the store, `.memoryd/review/<id>.json`, committed with the
heartbeat that held it: the queue is part of the truth (docs/store-format.md, The store is the
truth), so it survives the loss of
the state database, and it travels with the store to every host. Each file holds what would
have been filed (`kind`: `skill`, `routine-skill` or `tacit`; `agent`, `routine`, `topic`,
`text`), why it was held (`reasons`), where it came from (`sources`, see
`memoryd.store.provenance`), and the decision: `status` is `held`, `accepted` or `rejected`,
with `decided` (the date) once decided. Decided items stay, as the audit record, so that a
rejected tip proposed again is never held, nor filed, a second time.

The id is derived from what would be filed (kind, agent, routine, topic, normalized text), so
the same tip held by two conversations or two hosts is one item with two sources. Rendering is
deterministic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

from memoryd.errors import EXIT_USAGE, CorruptFileError, StoreError
from memoryd.store.provenance import TipSource
from memoryd.store.text import normalize_statement
from memoryd.worktree import FileTransaction

REVIEW_DIR: Final = ".memoryd/review"
REVIEW_FORMAT: Final = 1

ItemKind = Literal["skill", "routine-skill", "tacit"]
Status = Literal["held", "accepted", "rejected"]
_KINDS: Final = ("skill", "routine-skill", "tacit")
_STATUSES: Final = ("held", "accepted", "rejected")


class UnknownReviewItemError(StoreError):
    """No held item has the id given to `memoryd review accept|reject` (a usage error)."""

    exit_code = EXIT_USAGE


class AlreadyDecidedError(StoreError):
    """The item given to `memoryd review accept|reject` was decided before (a usage error)."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class ReviewItem:
    """A tip or tacit line held by the gate, and what became of it."""

    kind: ItemKind
    agent: str
    text: str
    reasons: tuple[str, ...]
    held: str  # the processing date it was first held, YYYY-MM-DD
    topic: str | None = None
    routine: str | None = None
    sources: tuple[TipSource, ...] = ()
    status: Status = "held"
    decided: str | None = None

    @property
    def id(self) -> str:
        return review_id(self.kind, self.agent, self.routine, self.topic, self.text)

    @property
    def path(self) -> str:
        return f"{REVIEW_DIR}/{self.id}.json"

    def to_json(self) -> dict[str, Any]:
        return {
            "format": REVIEW_FORMAT,
            "id": self.id,
            "kind": self.kind,
            "agent": self.agent,
            "routine": self.routine,
            "topic": self.topic,
            "text": self.text,
            "reasons": sorted(self.reasons),
            "sources": [source.to_json() for source in sorted(self.sources)],
            "status": self.status,
            "held": self.held,
            "decided": self.decided,
        }


def review_id(kind: str, agent: str, routine: str | None, topic: str | None, text: str) -> str:
    """The id of a held item: `r-` and 10 hex digits of a digest of what would be filed."""
    raw = "\0".join([kind, agent, routine or "", topic or "", normalize_statement(text)])
    return "r-" + hashlib.sha256(raw.encode()).hexdigest()[:10]


def _parse(text: str, path: str, tx: FileTransaction) -> ReviewItem:
    try:
        return parse_item(text)
    except ValueError as error:
        raise CorruptFileError(tx.root / path, str(error)) from None


def parse_item(text: str) -> ReviewItem:
    """The item a queue file's text holds. Raise ValueError when it is not what memoryd writes."""
    try:
        document: Mapping[str, Any] = json.loads(text)
        kind, status = _checked(document)
        return ReviewItem(
            kind=kind,  # type: ignore[arg-type]  # checked above
            agent=str(document["agent"]),
            text=str(document["text"]),
            reasons=tuple(str(reason) for reason in document["reasons"]),
            held=str(document["held"]),
            topic=None if document.get("topic") is None else str(document["topic"]),
            routine=None if document.get("routine") is None else str(document["routine"]),
            sources=tuple(TipSource.from_json(source) for source in document["sources"]),
            status=status,  # type: ignore[arg-type]  # checked above
            decided=None if document.get("decided") is None else str(document["decided"]),
        )
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise ValueError(f"not a review item ({error})") from None


def _checked(document: Mapping[str, Any]) -> tuple[str, str]:
    kind, status = str(document["kind"]), str(document["status"])
    if kind not in _KINDS or status not in _STATUSES:
        raise ValueError(f"unknown kind {kind!r} or status {status!r}")
    return kind, status


def read_item(tx: FileTransaction, item_id: str) -> ReviewItem | None:
    """The item with `item_id`, or None. Raise CorruptFileError for a broken file."""
    if not _is_id(item_id):
        return None
    path = f"{REVIEW_DIR}/{item_id}.json"
    text = tx.read_text(path)
    return None if text is None else _parse(text, path, tx)


def list_items(tx: FileTransaction) -> list[ReviewItem]:
    """Every item of the queue, held and decided, sorted by (held date, id)."""
    items = []
    for entry in tx.list_dir(REVIEW_DIR):
        if entry.endswith(".json") and _is_id(entry.removesuffix(".json")):
            path = f"{REVIEW_DIR}/{entry}"
            text = tx.read_text(path)
            if text is not None:
                items.append(_parse(text, path, tx))
    return sorted(items, key=lambda item: (item.held, item.id))


def render_item(item: ReviewItem) -> str:
    """The deterministic text of `item`'s queue file."""
    return json.dumps(item.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_item(tx: FileTransaction, item: ReviewItem) -> None:
    tx.write_text(item.path, render_item(item))


def hold(tx: FileTransaction, item: ReviewItem) -> ReviewItem:
    """Put `item` in the queue, or add its sources to the item already there (whatever its
    status); return the item as stored."""
    existing = read_item(tx, item.id)
    if existing is not None:
        sources = tuple(sorted(set(existing.sources) | set(item.sources)))
        reasons = tuple(sorted(set(existing.reasons) | set(item.reasons)))
        if sources == existing.sources and reasons == tuple(sorted(existing.reasons)):
            return existing
        item = replace(existing, sources=sources, reasons=reasons)
    write_item(tx, item)
    return item


def decide(tx: FileTransaction, item_id: str, status: Status, day: str) -> ReviewItem:
    """Record the decision on a held item; return it. Raise UnknownReviewItemError when no
    item has that id, AlreadyDecidedError when it was already decided."""
    item = read_item(tx, item_id)
    if item is None:
        raise UnknownReviewItemError(f"no held item {item_id!r}; `memoryd review` lists them")
    if item.status != "held":
        raise AlreadyDecidedError(f"{item_id} was already {item.status} on {item.decided}")
    decided = replace(item, status=status, decided=day)
    write_item(tx, decided)
    return decided


def held_count(items: Iterable[ReviewItem]) -> int:
    return sum(1 for item in items if item.status == "held")


def count_held_files(store_root: Path) -> int:
    """How many items of the queue under `store_root` wait for a decision, read straight from
    the files (for `memoryd status`, which opens no transaction and no git). A file that does
    not parse counts as held: someone has to look at it."""
    held = 0
    for path in sorted((store_root / REVIEW_DIR).glob("r-*.json")):
        try:
            held += json.loads(path.read_text(encoding="utf-8")).get("status") == "held"
        except (OSError, ValueError, AttributeError):
            held += 1
    return held


def _is_id(text: str) -> bool:
    return (
        len(text) == 12 and text.startswith("r-") and all(c in "0123456789abcdef" for c in text[2:])
    )
