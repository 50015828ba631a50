"""The reading side put together from real parts: `context`, `search`, an entity's facts.

Each call reads the store's files as they are (no git, no writer's lock, no model), answers,
and queues the facts it returned as read by the agent (`memoryd.reading.accesses`), for the next
heartbeat to count. Used by the `context` and `search` commands and by the MCP server.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from memoryd.errors import MemorydError, StoreError
from memoryd.jobs.environment import Environment
from memoryd.jobs.lock import after_unlock
from memoryd.logs import get_logger
from memoryd.reading.accesses import record_reads
from memoryd.reading.context import DEFAULT_BUDGET, MAX_ENTITIES, Bundle, build_bundle
from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.search import INDEX_FILE_NAME, Hit, SearchIndex
from memoryd.settings import Settings, state_directory
from memoryd.store.catalog import EntityCatalog
from memoryd.store.items import parse_items
from memoryd.store.tiers import TierRule, describe

log = get_logger(__name__)


def search_index_folder(settings: Settings, env: Environment) -> Path:
    """Where the search index lives: the state directory, or, for a reader that cannot write
    there (an agent of memoryd's group), its own cache (`$XDG_CACHE_HOME/memoryd/<store>`), built
    from the store like any copy of the index."""
    state_dir = state_directory(settings, env.environ)
    index = state_dir / INDEX_FILE_NAME
    writable = os.access(index, os.W_OK) if index.exists() else os.access(state_dir, os.W_OK)
    if writable or not state_dir.exists():
        return state_dir
    home = Path(env.environ.get("HOME") or Path.home())
    cache = Path(env.environ.get("XDG_CACHE_HOME") or home / ".cache")
    store_key = hashlib.sha256(str(settings.store.path).encode("utf-8")).hexdigest()[:16]
    return cache / "memoryd" / store_key


def today_for(settings: Settings, env: Environment) -> date:
    """Today in `schedule.timezone`."""
    return env.clock().astimezone(settings.schedule.zone).date()


def agent_context(
    settings: Settings,
    env: Environment,
    *,
    agent: str,
    routine: str | None = None,
    budget: int = DEFAULT_BUDGET,
    record: bool = True,
) -> Bundle:
    """The agent's start-of-run bundle; the facts its summaries cite are queued as read."""
    today = today_for(settings, env)
    rule = TierRule.from_settings(settings.decay)
    with SearchIndex.open(search_index_folder(settings, env), settings.store.path) as index:
        index.refresh(tacit_file=settings.store.tacit_file, skills_dir=settings.store.skills_dir)
        hottest = index.hottest_entities(today=today, rule=rule, limit=MAX_ENTITIES)
    bundle = build_bundle(
        ReadOnlyStore(settings.store.path),
        agent=agent,
        routine=routine,
        today=today,
        rule=rule,
        tacit_file=settings.store.tacit_file,
        skills_dir=settings.store.skills_dir,
        budget=budget,
        hottest=hottest,
    )
    if record:
        record_reads(
            state_directory(settings, env.environ), bundle.fact_ids, agent=agent, day=today
        )
    return bundle


def search_store(
    settings: Settings,
    env: Environment,
    query: str,
    *,
    agent: str,
    limit: int = 10,
    kinds: Sequence[str] = (),
    record: bool = True,
) -> list[Hit]:
    """The best hits for `query` (the index brought up to date first); fact hits are queued as
    read by `agent`."""
    today = today_for(settings, env)
    state_dir = state_directory(settings, env.environ)
    with SearchIndex.open(search_index_folder(settings, env), settings.store.path) as index:
        index.refresh(tacit_file=settings.store.tacit_file, skills_dir=settings.store.skills_dir)
        hits = index.search(
            query,
            today=today,
            rule=TierRule.from_settings(settings.decay),
            limit=limit,
            kinds=kinds,
        )
    if record:
        facts = [hit.id for hit in hits if hit.kind == "fact"]
        record_reads(state_dir, facts, agent=agent, day=today)
    return hits


def refresh_search_index(
    settings: Settings, env: Environment, paths: Sequence[str] | None = None
) -> None:
    """Bring the search index up to date (after a commit; with `paths`, those files only)."""
    with SearchIndex.open(search_index_folder(settings, env), settings.store.path) as index:
        index.refresh(
            tacit_file=settings.store.tacit_file,
            skills_dir=settings.store.skills_dir,
            paths=paths,
        )


def refresh_search_after_commit(
    settings: Settings, env: Environment, paths: Sequence[str] | None = None
) -> None:
    """Bring the search index up to date with a commit just made, once the writer's lock is
    released; `paths`: the store paths the commit changed, when known (the refresh then costs
    what changed, not a look at every file of the store). `search` also catches up before each
    query, so a failure here (logged), or an edit made by hand, only costs the next search the
    catching up."""

    def refresh() -> None:
        try:
            refresh_search_index(settings, env, paths)
        except (sqlite3.Error, OSError, MemorydError) as error:
            log.warning("search.refresh_failed", error=str(error))

    after_unlock(refresh)


@dataclass(frozen=True)
class EntityView:
    ref: str
    name: str
    kind: str
    status: str
    path: str
    summary: str
    facts: list[dict[str, object]]


def entity_view(
    settings: Settings, env: Environment, ref: str, *, agent: str, record: bool = True
) -> EntityView:
    """An entity's summary and every fact (with its status and tier today), by ref, name or
    alias. Raise StoreError when no entity matches. Its active facts are queued as read."""
    store = ReadOnlyStore(settings.store.path)
    catalog = EntityCatalog.load(store)
    entity = catalog.by_ref(ref) or catalog.resolve(ref)
    if entity is None:
        raise StoreError(f"no entity {ref!r} (give a ref such as people/jane-doe, or a name)")
    today = today_for(settings, env)
    rule = TierRule.from_settings(settings.decay)
    text = store.read_text(entity.items_path)
    facts = parse_items(store.root / entity.items_path, text) if text is not None else []
    view = EntityView(
        ref=entity.ref,
        name=entity.name,
        kind=entity.kind,
        status=entity.status,
        path=entity.folder,
        summary=store.read_text(entity.summary_path) or "",
        facts=[
            {
                "id": fact.id,
                "fact": fact.fact,
                "category": fact.category,
                "timestamp": fact.timestamp.isoformat(),
                "status": fact.status,
                "supersededBy": fact.superseded_by,
                "tier": describe(fact, today, rule).tier if fact.status == "active" else None,
            }
            for fact in facts
        ],
    )
    if record:
        active = [fact.id for fact in facts if fact.status == "active"]
        record_reads(state_directory(settings, env.environ), active, agent=agent, day=today)
    return view
