"""Where each filed skill tip and tacit line came from.

Agents read the skills files and the tacit file as advice, so the Markdown stays as it is; the
provenance of its bullets lives beside it, in the store, one JSON file per Markdown file:
`.memoryd/provenance/<path of the Markdown file>.json`, e.g.
`.memoryd/provenance/agents/ops/fail2ban.md.json`. It maps each bullet's text (as filed) to the
sources that proposed it, each `{agent, session, file, lines, locator, trust, day}`, where
`trust` says whose text supported it: `user`, `agent` or `untrusted` (tool output).

Rendering is deterministic (sorted keys, sorted and de-duplicated sources), so filing the same
tip from the same place again changes nothing. Every filed bullet has an entry: a tip filed again
in other words adds its source under the bullet as filed, and a tip the weekly consolidation
merges or moves gets the sources of the tips it was made from under its new file and text
(`carry_provenance`), while their old entries stay (a record of what was proposed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from memoryd.errors import CorruptFileError
from memoryd.worktree import FileTransaction

PROVENANCE_DIR: Final = ".memoryd/provenance"
PROVENANCE_FORMAT: Final = 1

Trust = Literal["user", "agent", "untrusted"]
TRUST_LEVELS: Final[tuple[Trust, ...]] = ("user", "agent", "untrusted")


@dataclass(frozen=True, order=True)
class TipSource:
    """One conversation that proposed a tip: who, where, which lines, and whose text it was."""

    agent: str
    session: str
    file: str
    lines: tuple[int, int]
    trust: Trust
    day: str  # the conversation's date, YYYY-MM-DD
    locator: str | None = None

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["lines"] = list(self.lines)
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> TipSource:
        trust = str(document["trust"])
        if trust not in TRUST_LEVELS:
            raise ValueError(f"unknown trust {trust!r}")
        lines = document["lines"]
        return cls(
            agent=str(document["agent"]),
            session=str(document["session"]),
            file=str(document["file"]),
            lines=(int(lines[0]), int(lines[1])),
            trust=trust,
            day=str(document["day"]),
            locator=None if document.get("locator") is None else str(document["locator"]),
        )


def provenance_path(markdown_path: str) -> str:
    """The store-relative path of the provenance of the Markdown file at `markdown_path`."""
    return f"{PROVENANCE_DIR}/{markdown_path}.json"


def read_provenance(tx: FileTransaction, markdown_path: str) -> dict[str, list[TipSource]]:
    """The recorded sources of each bullet of `markdown_path` (empty when none is recorded).
    Raise CorruptFileError when the file is not what memoryd writes."""
    path = provenance_path(markdown_path)
    text = tx.read_text(path)
    if text is None:
        return {}
    try:
        return parse_provenance(text)
    except ValueError as error:
        raise CorruptFileError(tx.root / path, str(error)) from None


def parse_provenance(text: str) -> dict[str, list[TipSource]]:
    """The tips and sources of a provenance file's text. Raise ValueError when it is not what
    memoryd writes."""
    try:
        document = json.loads(text)
        return {
            str(tip): [TipSource.from_json(source) for source in sources]
            for tip, sources in document["tips"].items()
        }
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise ValueError(f"not a provenance file ({error})") from None


def render_provenance(tips: Mapping[str, Iterable[TipSource]]) -> str:
    """The deterministic text of a provenance file holding `tips` (sources sorted, once each)."""
    document = {
        "format": PROVENANCE_FORMAT,
        "tips": {
            text: [item.to_json() for item in sorted(set(items))]
            for text, items in sorted(tips.items())
        },
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def record_provenance(tx: FileTransaction, markdown_path: str, tip: str, source: TipSource) -> None:
    """Record that `source` proposed `tip` (as filed in `markdown_path`)."""
    tips = read_provenance(tx, markdown_path)
    sources = set(tips.get(tip, []))
    if source in sources:
        return
    tips[tip] = sorted(sources | {source})
    tx.write_text(provenance_path(markdown_path), render_provenance(tips))


# (old Markdown path, old bullet text, new Markdown path, new bullet text)
Move = tuple[str, str, str, str]


def sources_of(tx: FileTransaction, markdown_path: str, tips: Iterable[str]) -> list[TipSource]:
    """The recorded sources of the bullets `tips` of `markdown_path`, once each, sorted."""
    recorded = read_provenance(tx, markdown_path)
    return sorted({source for tip in tips for source in recorded.get(tip, [])})


def carry_provenance(tx: FileTransaction, moves: Iterable[Move]) -> None:
    """Record, under each rewritten bullet (its new file and text), every source recorded for
    the bullets it was made from, so a tip the weekly consolidation merged or moved is never
    filed without provenance. The old entries stay (a record of what was proposed). Every old
    entry is read before anything is written."""
    files: dict[str, dict[str, list[TipSource]]] = {}
    planned = list(moves)
    for old_path, _, new_path, _ in planned:
        for path in (old_path, new_path):
            if path not in files:
                files[path] = read_provenance(tx, path)
    carried: dict[str, dict[str, set[TipSource]]] = {}
    for old_path, old_text, new_path, new_text in planned:
        sources = files[old_path].get(old_text, [])
        carried.setdefault(new_path, {}).setdefault(new_text, set()).update(sources)
    for path, tips in sorted(carried.items()):
        current = dict(files[path])
        for text, more in tips.items():
            current[text] = sorted(set(current.get(text, [])) | more)
        current = {text: known for text, known in current.items() if known}
        if current != files[path]:
            tx.write_text(provenance_path(path), render_provenance(current))
