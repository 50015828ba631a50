"""Helpers for rewrite tests: facts and entities built in memory, and a populated store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import Entity
from memoryd.store.facts import FactDraft, FactFile
from memoryd.store.items import Fact, FactSource
from memoryd.store.layout import init_store
from memoryd.worktree import UnitOfWork

SOURCE = FactSource(agent="ops", session="s1", file="/logs/a.jsonl", lines=(1, 2))
TODAY = date(2026, 3, 10)


def fact(
    fact_id: str,
    text: str = "Some fact",
    *,
    age: int = 0,
    accesses: int = 0,
    status: str = "active",
    today: date = TODAY,
) -> Fact:
    return Fact(
        id=fact_id,
        fact=text,
        category="context",
        timestamp=today - timedelta(days=age),
        status="active" if status == "active" else "superseded",
        superseded_by=None if status == "active" else "x-999",
        related_entities=(),
        last_accessed=today - timedelta(days=age),
        access_count=accesses,
        recorded_at=today - timedelta(days=age),
        source=SOURCE,
    )


def person(name: str = "Jane Doe", slug: str = "jane-doe") -> Entity:
    return Entity(name=name, kind="person", slug=slug)


@dataclass(frozen=True)
class Planted:
    """A fact to plant: entity name and kind, text, days since last use, accesses."""

    entity: str
    text: str
    age: int
    accesses: int = 0
    kind: str = "person"


def planted_store(path: Path, facts: Sequence[Planted], *, today: date = TODAY) -> Path:
    """A new store at `path` (`memoryd init`'s defaults) with `facts` planted in one commit."""
    init_store(path, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    plant(path, facts, today=today)
    return path


def plant(store: Path, facts: Sequence[Planted], *, today: date = TODAY) -> str | None:
    """File `facts` into the store at `store` through the real store modules; commit them."""
    git = GitStore(store, GitIdentity("memoryd", "memoryd@localhost"), None)
    uow = UnitOfWork(git)
    catalog = EntityCatalog.load(uow)
    files: dict[str, FactFile] = {}
    for item in facts:
        entity = catalog.resolve(item.entity, item.kind) or catalog.create(
            item.entity, item.kind, today=today
        )
        fact_file = files.setdefault(entity.ref, FactFile(uow, entity))
        on = today - timedelta(days=item.age)  # filed on the day of its conversation
        outcome = fact_file.add(FactDraft(item.text, "context", on, on, SOURCE), recorded_at=on)
        for _ in range(item.accesses):
            fact_file.bump(outcome.fact.id, on)
    for fact_file in files.values():
        fact_file.save()
    return uow.apply_and_commit("test: plant facts", {})
