"""The heartbeat job: one heartbeat over freshly opened real parts, and its dry run.

The caller (the `heartbeat` command, the daemon) holds the single-writer lock. The heartbeat
runs inside one writing session (`memoryd.jobs.session`: settle, check the store, reconcile and
recover, pull, then after it push, `index.commands` and the search refresh), with the extractor
open for its length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE
from memoryd.collector import frozen_while
from memoryd.extractors.extract import Extractor, MarkersExtractor, WatchedExtractor
from memoryd.gitrepo import GitStore
from memoryd.heartbeat import (
    SECONDS_PER_CALL,
    Heartbeat,
    HeartbeatOptions,
    HeartbeatReport,
    whole_backlog,
)
from memoryd.jobs.environment import Environment, host_name, open_state
from memoryd.jobs.parts import (
    extractor_for,
    git_store,
    llm_client_for,
    make_cleaner,
    make_scanner,
    make_scrubber,
    prepare_store,
)
from memoryd.jobs.session import writing_session
from memoryd.jobs.sources import build_sources
from memoryd.llm.tokens import chunk_tokens_for, token_factor
from memoryd.logs import get_logger
from memoryd.reading.accesses import claim_reads, release_reads
from memoryd.settings import Settings, state_directory
from memoryd.state.facade import State
from memoryd.store import CATALOG_CACHE_FILE

if TYPE_CHECKING:
    from memoryd.store.catalog import EntityCatalog
    from memoryd.worktree import FileTransaction

# Summaries and the search index are refreshed only after a heartbeat that filed something: their
# modules are imported there, so that an idle heartbeat does not pay for them. The same for the
# online dry run's request counting, and for the fact store (`memoryd.store.items`), whose host
# code only a shared store needs.


def heartbeat_options(
    settings: Settings,
    host: str,
    catalog_cache: Path | None = None,
    *,
    keep_catalog: bool = False,
) -> HeartbeatOptions:
    host_code = None
    if settings.git.push:  # a store shared by several hosts numbers each host's facts apart
        from memoryd.store.items import host_id_code  # noqa: PLC0415 - see the top

        host_code = host_id_code(host)
    model = settings.llm.model
    asks_a_model = settings.llm.provider != "markers"
    chunk_tokens = settings.llm.chunk_tokens
    if asks_a_model:  # in the model's own tokens, under its price band (`memoryd.llm.tokens`)
        chunk_tokens = chunk_tokens_for(model, chunk_tokens, PROMPT_TOKENS_ALLOWANCE)
        if chunk_tokens != settings.llm.chunk_tokens:
            get_logger("memoryd.jobs").info(
                "llm.chunk_tokens_clamped",
                model=model,
                configured=settings.llm.chunk_tokens,
                effective=chunk_tokens,
            )
    return HeartbeatOptions(
        zone=settings.schedule.zone,
        chunk_tokens=chunk_tokens,
        token_factor=token_factor(model) if asks_a_model else 1.0,
        context_facts=settings.llm.context_facts,
        min_mentions=settings.entities.min_mentions,
        skills_dir=settings.store.skills_dir,
        tacit_file=settings.store.tacit_file,
        backfill=settings.backfill.window,
        daily_usd=settings.budget.daily_usd,
        heartbeat_usd=settings.budget.heartbeat_usd,
        model=settings.llm.model,
        host=host,
        host_code=host_code,
        # The markers provider asks no model: nothing to wait for, nothing to run ahead.
        concurrency=settings.llm.concurrency if settings.llm.provider != "markers" else 1,
        sections_per_call=settings.llm.sections_per_call,
        catalog_cache=catalog_cache,
        keep_catalog=keep_catalog,
        agents=frozenset(agent.name for agent in settings.agents),
    )


def build_heartbeat(
    settings: Settings,
    env: Environment,
    state: State,
    extractor: Extractor,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    dry_run: bool = False,
    run_id: str | None = None,
    reads: Sequence[tuple[str, str, date]] = (),
    git: GitStore | None = None,
) -> Heartbeat:
    """A Heartbeat over real parts. Given the `git` of a writing session (`memoryd.jobs.session`),
    which has checked the store, it works on it; otherwise the store is checked here (and migrated
    unless `dry_run`). `reads` are the queued reads by agents it files as accesses
    (`memoryd.reading.accesses`)."""
    if git is None:
        git = git_store(settings, env.clock)
        # The heartbeat's foreign-edits step removes leftover temporary files from `git status`.
        prepare_store(git, dry_run=dry_run, sweep=False)

    def refresh(
        tx: FileTransaction, catalog: EntityCatalog, items_paths: Sequence[str], today: date
    ) -> list[str]:
        from memoryd.store.refresh import refresh_summaries  # noqa: PLC0415 - see the top
        from memoryd.store.tiers import TierRule  # noqa: PLC0415

        rule = TierRule.from_settings(settings.decay)
        return refresh_summaries(tx, catalog, items_paths, today=today, rule=rule)

    return Heartbeat(
        settings=heartbeat_options(
            settings,
            host_name(settings, env),
            state_directory(settings, env.environ) / CATALOG_CACHE_FILE,
            keep_catalog=env.long_lived,
        ),
        sources=build_sources(settings, state_directory(settings, env.environ)),
        state=state,
        git=git,
        extractor=extractor,
        clean=make_cleaner(settings),
        scan_secrets=make_scanner(settings),
        prices=settings.llm.price_table(),
        clock=env.clock,
        should_stop=should_stop,
        run_id=run_id,
        refresh_summaries=refresh,
        reads=reads,
    )


def run_heartbeat(
    settings: Settings,
    env: Environment,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    run_id: str | None = None,
    watch_calls: Callable[[], AbstractContextManager[object]] | None = None,
    progress: Callable[[HeartbeatReport], None] | None = None,
) -> HeartbeatReport:
    """One heartbeat (see the module docstring; the caller holds the single-writer lock).

    `watch_calls` wraps every model call (the daemon marks the time spent waiting on the LLM);
    `progress` is called with the report so far after each chunk sent to the model. What the
    heartbeat builds to keep for its length (the catalogue, the SDK) is frozen out of the
    collector's passes until it ends (`memoryd.collector`).
    """
    with frozen_while():
        return _run_heartbeat(
            settings,
            env,
            should_stop=should_stop,
            run_id=run_id,
            watch_calls=watch_calls,
            progress=progress,
        )


def _run_heartbeat(
    settings: Settings,
    env: Environment,
    *,
    should_stop: Callable[[], bool],
    run_id: str | None,
    watch_calls: Callable[[], AbstractContextManager[object]] | None,
    progress: Callable[[HeartbeatReport], None] | None,
) -> HeartbeatReport:
    with (
        writing_session(settings, env, sweep=False) as session,
        extractor_for(settings, env) as extractor,
    ):
        watched = extractor if watch_calls is None else WatchedExtractor(extractor, watch_calls)
        if progress is not None:
            watched = WatchedExtractor(watched, lambda: _after(lambda: progress(heartbeat.report)))
        claimed = claim_reads(
            state_directory(settings, env.environ),
            {agent.name: agent.uid() for agent in settings.agents},
        )
        heartbeat = build_heartbeat(
            settings,
            env,
            session.state,
            watched,
            should_stop=should_stop,
            run_id=run_id,
            reads=claimed.reads,
            git=session.git,
        )
        report = heartbeat.run()
        if heartbeat.reads_filed:
            release_reads(claimed)
        session.record_commit(
            report.commit or report.foreign_commit, paths=heartbeat.committed_paths
        )
    report.sync_problem = session.sync_problem
    return report


@contextmanager
def _after(callback: Callable[[], None]) -> Iterator[None]:
    """Call `callback` once the block ends, however it ends."""
    try:
        yield
    finally:
        callback()


def dry_run_heartbeat(
    settings: Settings,
    env: Environment,
    *,
    online: bool = False,
    seconds_per_call: float = SECONDS_PER_CALL,
) -> dict[str, object]:
    """What a heartbeat would send now: chunks, estimated tokens and cost, and under `backlog`
    the whole bill, every heartbeat the backlog will take (`memoryd.heartbeat.dryrun`, its
    duration at `seconds_per_call`). Changes nothing. `online`: the endpoint also counts the
    requests the next heartbeat would send (`memoryd.heartbeat.counting`); no extraction is
    asked. Raise ConfigError when `online` finds no API key."""
    asks_a_model = settings.llm.provider != "markers"
    with open_state(settings, env) as state, ExitStack() as stack:
        # A dry run asks no model: the markers extractor stands in and is never asked.
        extractor = MarkersExtractor(make_scrubber(settings))
        heartbeat = build_heartbeat(settings, env, state, extractor, dry_run=True)
        counting = None
        if online and asks_a_model:
            client = stack.enter_context(llm_client_for(settings, env))
            assert client is not None  # noqa: S101 - the provider asks a model
            from memoryd.extractors.llm_extractor import LLMExtractor  # noqa: PLC0415 - see the top

            builder = LLMExtractor(
                client,
                model=settings.llm.model,
                max_tokens=settings.llm.max_output_tokens,
                scrub=make_scrubber(settings),
            )
            counting = (builder, client)
        report = heartbeat.dry_run(shares_calls=asks_a_model, counting=counting)
        report["backlog"] = whole_backlog(
            heartbeat,
            asks_a_model=asks_a_model,
            shares_calls=asks_a_model,
            seconds_per_call=seconds_per_call,
        )
    report["provider"] = settings.llm.provider
    if online and not asks_a_model:
        note = 'llm.provider is "markers": nothing would be sent to count'
        report["token_count_note"] = note
    if settings.llm.provider == "markers":
        # Markers are filed without a model: nothing is sent and nothing is billed.
        report.update(
            model=None, estimated_calls=0, estimated_input_tokens=0, estimated_cost_usd=0.0
        )
    return report
