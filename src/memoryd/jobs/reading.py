"""The reading side put together from real parts: `context`, `search`, an entity's facts.

Each call reads the store's files as they are (no git, no writer's lock, no model), answers,
and queues the facts it returned as read by the agent (`memoryd.reading.accesses`), for the next
heartbeat to count. Used by the `context` and `search` commands and by the MCP server.

A reader needs to write nothing: the search index is kept in the state directory when it can
be written, else in the reader's cache, else built in memory for the one answer; a read that
cannot be queued is logged and reported in the answer (`QueuedReads`), and the answer is given.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TypeVar

from memoryd.errors import MemorydError, StoreError
from memoryd.jobs.environment import Environment
from memoryd.jobs.lock import after_unlock
from memoryd.logs import get_logger
from memoryd.reading.accesses import QueuedReads, record_reads
from memoryd.reading.context import CANDIDATES, DEFAULT_BUDGET, Bundle, build_bundle
from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.formats import ceiling_for, limit_name
from memoryd.reading.search import INDEX_FILE_NAME, Hit, SearchIndex, read_query
from memoryd.settings import Settings, state_directory
from memoryd.store.catalog import EntityCatalog
from memoryd.store.items import parse_items
from memoryd.store.tiers import TierRule, describe

log = get_logger(__name__)
_T = TypeVar("_T")


def search_index_folder(settings: Settings, env: Environment) -> Path:
    """Where the search index lives: the state directory, or, for a reader that cannot write
    there (an agent of memoryd's group), its own cache (`$XDG_CACHE_HOME/memoryd/<store>`), built
    from the store like any copy of the index."""
    state_dir = state_directory(settings, env.environ)
    index = state_dir / INDEX_FILE_NAME
    writable = os.access(index, os.W_OK) if index.exists() else os.access(state_dir, os.W_OK)
    if writable or not state_dir.exists():
        return state_dir
    return _cache_folder(settings, env)


def _cache_folder(settings: Settings, env: Environment) -> Path:
    home = Path(env.environ.get("HOME") or Path.home())
    cache = Path(env.environ.get("XDG_CACHE_HOME") or home / ".cache")
    store_key = hashlib.sha256(str(settings.store.path).encode("utf-8")).hexdigest()[:16]
    return cache / "memoryd" / store_key


def _with_index(settings: Settings, env: Environment, action: Callable[[SearchIndex], _T]) -> _T:
    """`action` on the search index brought up to date, kept where a reader can keep it (module
    docstring): a folder that cannot be used is logged and the next one tried."""
    state_dir = state_directory(settings, env.environ)
    places: list[Path | None] = []
    if state_dir.is_dir():  # a reader never makes the state directory
        places.append(search_index_folder(settings, env))
    places += [_cache_folder(settings, env), None]
    for folder in dict.fromkeys(places):
        try:
            with SearchIndex.open(folder, settings.store.path) as index:
                index.refresh(
                    tacit_file=settings.store.tacit_file, skills_dir=settings.store.skills_dir
                )
                return action(index)
        except (OSError, sqlite3.OperationalError) as error:
            if folder is None:
                raise
            log.info("search.index_elsewhere", folder=str(folder), reason=str(error))
    raise AssertionError("unreachable")  # pragma: no cover - the last place is memory


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
    output_format: str = "plain",
) -> Bundle:
    """The agent's start-of-run bundle, within the ceiling of `output_format`
    (`memoryd.reading.formats`); the facts its summaries cite are queued as read."""
    today = today_for(settings, env)
    rule = TierRule.from_settings(settings.decay)
    hottest = _with_index(
        settings,
        env,
        lambda index: index.hottest_entities(today=today, rule=rule, limit=CANDIDATES),
    )
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
        ceiling=ceiling_for(output_format),
        limit_label=limit_name(output_format),
        share=settings.reading.share_between_agents,
    )
    if record:
        bundle.reads = record_reads(
            state_directory(settings, env.environ), bundle.fact_ids, agent=agent, day=today
        )
    return bundle


@dataclass(frozen=True)
class Found:
    """A search's hits, whether the facts among them were queued as read, and whether the
    query was longer than what a search reads (`memoryd.reading.search.MAX_QUERY_CHARS`)."""

    hits: list[Hit]
    reads: QueuedReads
    query_cut: bool = False


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
    """The best hits for `query` (`find`)."""
    return find(settings, env, query, agent=agent, limit=limit, kinds=kinds, record=record).hits


def find(
    settings: Settings,
    env: Environment,
    query: str,
    *,
    agent: str,
    limit: int = 10,
    kinds: Sequence[str] = (),
    record: bool = True,
    operator: bool = False,
    stop: Callable[[], bool] | None = None,
) -> Found:
    """The best hits for `query` (the index brought up to date first); fact hits are queued as
    read by `agent`, which is shown the shared entries and its own (all of them with
    `[reading] share_between_agents`, or for the `operator` at the command line). `stop`:
    see `SearchIndex.search`."""
    today = today_for(settings, env)
    rule = TierRule.from_settings(settings.decay)
    reader = None if operator or settings.reading.share_between_agents else agent
    hits = _with_index(
        settings,
        env,
        lambda index: index.search(
            query, today=today, rule=rule, limit=limit, kinds=kinds, reader=reader, stop=stop
        ),
    )
    reads = QueuedReads(0, queued=True)
    if record:
        facts = [hit.id for hit in hits if hit.kind == "fact"]
        reads = record_reads(state_directory(settings, env.environ), facts, agent=agent, day=today)
    return Found(hits, reads, read_query(query).cut)


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
    reads: QueuedReads = field(default_factory=lambda: QueuedReads(0, queued=True))


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
        reads = record_reads(state_directory(settings, env.environ), active, agent=agent, day=today)
        view = replace(view, reads=reads)
    return view
