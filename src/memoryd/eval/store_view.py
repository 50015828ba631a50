"""What a store holds, read from its files as plain data for scoring (docs/store-format.md).

Read-only and independent of memoryd's own parsers, so that a scorecard says what an agent
reading the files would find: entities (`entity.json` + `items.json`), skills (bullets of the
topic and routine files, the index left out since it repeats each topic's first tip), tacit
bullets, the review queue, summaries, and every text file for the secrets scan.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.worktree import slugify

_BULLET = re.compile(r"^\s*[-*+]\s+(.*\S)\s*$")
_CITATION = re.compile(r"\[([a-z0-9][a-z0-9-]*-\d+)\]")


@dataclass(frozen=True)
class StoredFact:
    id: str
    text: str
    status: str


@dataclass(frozen=True)
class StoredEntity:
    ref: str
    name: str
    aliases: tuple[str, ...]
    facts: tuple[StoredFact, ...]
    summary: str

    @property
    def names(self) -> frozenset[str]:
        """The slugs of its name, its aliases and its folder."""
        return frozenset(
            {slugify(n) for n in (self.name, *self.aliases)} | {self.ref.split("/")[-1]}
        )

    def active(self) -> list[StoredFact]:
        return [f for f in self.facts if f.status == "active"]


@dataclass(frozen=True)
class HeldItem:
    kind: str
    text: str
    status: str


@dataclass(frozen=True)
class StoreView:
    entities: tuple[StoredEntity, ...]
    skills: dict[str, tuple[str, ...]]  # agent -> tips
    tacit: tuple[str, ...]
    held: tuple[HeldItem, ...]
    texts: dict[str, str]  # relative path -> content, every text file outside .git

    def all_facts(self) -> list[StoredFact]:
        return [f for e in self.entities for f in e.facts]

    def all_tips(self) -> list[str]:
        return [t for tips in self.skills.values() for t in tips]

    def fact_ids(self) -> set[str]:
        return {f.id for f in self.all_facts()}


def bullets(text: str) -> list[str]:
    return [m.group(1) for line in text.splitlines() if (m := _BULLET.match(line))]


def citations(line: str) -> list[str]:
    return _CITATION.findall(line)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _entity(store: Path, metadata: Path) -> StoredEntity:
    folder = metadata.parent
    meta = _json(metadata) or {}
    items = _json(folder / "items.json") or []
    facts = tuple(
        StoredFact(str(i.get("id", "")), str(i.get("fact", "")), str(i.get("status", "")))
        for i in items
        if isinstance(i, dict)
    )
    summary = folder / "summary.md"
    relative = folder.relative_to(store / "life").parts
    ref = "/".join(relative)
    return StoredEntity(
        ref=ref,
        name=str(meta.get("name", folder.name)),
        aliases=tuple(str(a) for a in meta.get("aliases", [])),
        facts=facts,
        summary=summary.read_text(encoding="utf-8") if summary.is_file() else "",
    )


def read_store(
    store: Path, *, tacit_file: str = "MEMORY.md", skills_dir: str = "agents"
) -> StoreView:
    entities = tuple(_entity(store, path) for path in sorted((store / "life").rglob("entity.json")))
    skills: dict[str, tuple[str, ...]] = {}
    agents_root = store / skills_dir
    if agents_root.is_dir():
        for agent in sorted(p for p in agents_root.iterdir() if p.is_dir()):
            tips = [
                tip
                for md in sorted(agent.rglob("*.md"))
                if md.name != "skills-index.md"
                for tip in bullets(md.read_text(encoding="utf-8"))
            ]
            skills[agent.name] = tuple(tips)
    tacit_path = store / tacit_file
    tacit = tuple(bullets(tacit_path.read_text(encoding="utf-8"))) if tacit_path.is_file() else ()
    held = []
    for path in sorted((store / ".memoryd" / "review").glob("*.json")):
        item = _json(path) or {}
        held.append(HeldItem(str(item.get("kind")), str(item.get("text")), str(item.get("status"))))
    texts = {}
    for path in sorted(store.rglob("*")):
        relative = path.relative_to(store)
        if path.is_file() and ".git" not in relative.parts:
            try:
                texts[relative.as_posix()] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    return StoreView(entities, skills, tacit, tuple(held), texts)
