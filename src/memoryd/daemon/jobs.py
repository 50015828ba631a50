"""The jobs: real parts wired together from the settings, one function per job.

This is where configuration becomes objects: the state database, the git store, the source
readers, the extractor (the Anthropic adapter or the markers provider), the cleaner and the
secret scanner. Each job opens what it needs and closes it when done, so a long-running daemon
holds no repository or database open between jobs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from memoryd.daemon import hooks
from memoryd.errors import ConfigError, StoreError
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import (
    ChunkContext,
    Extraction,
    Extractor,
    LLMExtractor,
    MarkersExtractor,
)
from memoryd.extractors.heartbeat import Heartbeat, HeartbeatReport, HeartbeatSettings, Source
from memoryd.llm.anthropic_client import AnthropicClient
from memoryd.redaction import redact, secret_kinds
from memoryd.rewrite.recovery import finish_interrupted_rewrite
from memoryd.settings import Settings, find_api_key, find_base_url, state_directory
from memoryd.sources.clean import clean_conversation
from memoryd.sources.model import Conversation
from memoryd.sources.reader import SourceReader
from memoryd.state.facade import DATABASE_FILE_NAME, State
from memoryd.store.git import GitIdentity, GitStore
from memoryd.store.layout import check_format, open_store, read_format

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Environment:
    """What the entry point read from the outside world, handed down explicitly."""

    environ: Mapping[str, str]
    clock: Clock

    @classmethod
    def live(cls, environ: Mapping[str, str]) -> Environment:
        """The real world, for the entry points: this environment and the wall clock (UTC)."""
        return cls(environ=environ, clock=lambda: datetime.now(UTC))


# A one-shot command (heartbeat, rewrite, retry) waits this long for a running job to finish,
# then exits 75 naming the holder of the lock.
LOCK_WAIT_SECONDS = 10.0


def source_key(format_name: str, path: str) -> str:
    """A source's identity in the state database: its format and configured path."""
    return f"{format_name}:{path}"


def build_sources(settings: Settings) -> list[Source]:
    return [
        Source(agent.name, source_key(source.format, source.path), SourceReader(agent.name, source))
        for agent in settings.agents
        for source in agent.sources
    ]


@contextmanager
def llm_client_for(settings: Settings, env: Environment) -> Iterator[AnthropicClient | None]:
    """The Anthropic client the configuration asks for (None with `provider = "markers"`),
    closed with its connections on exit. Raise ConfigError when no API key can be found."""
    if settings.llm.provider == "markers":
        yield None
        return
    api_key, where = find_api_key(settings, env.environ)
    if api_key is None:
        raise ConfigError(None, [f"At 'llm': no API key found ({where}); run `memoryd check`"])
    with AnthropicClient(
        api_key=api_key,
        base_url=find_base_url(settings, env.environ),
        timeout_seconds=settings.llm.timeout_seconds,
        max_attempts=settings.llm.max_attempts,
    ) as client:
        yield client


@contextmanager
def extractor_for(settings: Settings, env: Environment) -> Iterator[Extractor]:
    """The configured extractor: the model through the API, or the markers provider."""
    scrub = functools.partial(redact, extra_patterns=tuple(settings.cleaning.extra_patterns))
    with llm_client_for(settings, env) as client:
        if client is None:
            yield MarkersExtractor(scrub=scrub)
        else:
            yield LLMExtractor(
                client,
                model=settings.llm.model,
                max_tokens=settings.llm.max_output_tokens,
                scrub=scrub,
            )


def heartbeat_settings(settings: Settings) -> HeartbeatSettings:
    return HeartbeatSettings(
        zone=settings.schedule.zone,
        chunk_tokens=settings.llm.chunk_tokens,
        context_facts=settings.llm.context_facts,
        min_mentions=settings.entities.min_mentions,
        skills_dir=settings.store.skills_dir,
        tacit_file=settings.store.tacit_file,
        backfill=settings.backfill.window,
        daily_usd=settings.budget.daily_usd,
        heartbeat_usd=settings.budget.heartbeat_usd,
        model=settings.llm.model,
    )


def git_store(settings: Settings, clock: Clock) -> GitStore:
    identity = GitIdentity(settings.git.author_name, settings.git.author_email)
    return GitStore(
        settings.store.path, identity, clock, command_timeout_seconds=settings.git.timeout_seconds
    )


def prepare_store(git: GitStore, *, dry_run: bool) -> None:
    """Check the store before a job: it must be a memoryd store of a format this memoryd reads.
    A real run also migrates an older format and sweeps leftover temporary files; a dry run
    changes nothing. Raise StoreError (run `memoryd init`) or StoreFormatError."""
    if not dry_run:
        open_store(git.store_root, git)
        return
    version = read_format(git.store_root)
    if version is None:
        raise StoreError(f"{git.store_root} is not a memoryd store yet; run `memoryd init`")
    check_format(git.store_root, version)


@contextmanager
def open_state(settings: Settings, env: Environment) -> Iterator[State]:
    directory = state_directory(settings, env.environ)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    state = State.open(directory / DATABASE_FILE_NAME)
    try:
        yield state
    finally:
        state.close()


def make_cleaner(settings: Settings) -> Callable[[Conversation], Conversation | None]:
    patterns = tuple(settings.cleaning.extra_patterns)
    limit = settings.cleaning.tool_output_chars

    def clean(conversation: Conversation) -> Conversation | None:
        cleaned, _stats = clean_conversation(
            conversation, extra_patterns=patterns, tool_output_chars=limit
        )
        return cleaned if cleaned.turns else None

    return clean


def make_scanner(settings: Settings) -> Callable[[str], list[str]]:
    patterns = tuple(settings.cleaning.extra_patterns)
    return lambda text: secret_kinds(text, patterns)


def build_heartbeat(
    settings: Settings,
    env: Environment,
    state: State,
    extractor: Extractor,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    dry_run: bool = False,
    run_id: str | None = None,
) -> Heartbeat:
    git = git_store(settings, env.clock)
    prepare_store(git, dry_run=dry_run)
    return Heartbeat(
        settings=heartbeat_settings(settings),
        sources=build_sources(settings),
        state=state,
        git=git,
        extractor=extractor,
        clean=make_cleaner(settings),
        scan_secrets=make_scanner(settings),
        prices=settings.llm.price_table(),
        clock=env.clock,
        should_stop=should_stop,
        run_id=run_id,
    )


def run_heartbeat(
    settings: Settings,
    env: Environment,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    run_id: str | None = None,
    wrap_extractor: Callable[[Extractor], Extractor] | None = None,
    progress: Callable[[HeartbeatReport], None] | None = None,
) -> HeartbeatReport:
    """One heartbeat with freshly opened parts (the caller holds the single-writer lock).

    With `git.push`, memory pushed from elsewhere is pulled in first and the result pushed
    after; `index.commands` run after a commit (`memoryd.daemon.hooks`: neither can fail the
    heartbeat). `wrap_extractor` lets the daemon watch the model calls; `progress` is called
    with the report so far after each chunk sent to the model.
    """
    git = git_store(settings, env.clock)
    hooks.before_writing(settings, git)
    with open_state(settings, env) as state, extractor_for(settings, env) as extractor:
        wrapped = extractor if wrap_extractor is None else wrap_extractor(extractor)
        if progress is not None:
            wrapped = _Observed(wrapped, lambda: progress(heartbeat.report))
        heartbeat = build_heartbeat(
            settings, env, state, wrapped, should_stop=should_stop, run_id=run_id
        )
        # A rewrite killed mid-commit left its own half-done writes: undo (or finish) them
        # first, so the heartbeat never commits them as someone else's edits.
        finish_interrupted_rewrite(state, heartbeat.git, env.clock())
        report = heartbeat.run()
    hooks.after_commit(settings, git, committed=bool(report.commit or report.foreign_commit))
    return report


class _Observed:
    """An extractor that calls `after` once each extraction returns or fails."""

    def __init__(self, inner: Extractor, after: Callable[[], None]) -> None:
        self._inner = inner
        self._after = after

    @property
    def prompt_refs(self) -> tuple[str, ...]:
        return self._inner.prompt_refs

    def extract(self, chunk: Chunk, context: ChunkContext) -> Extraction:
        try:
            return self._inner.extract(chunk, context)
        finally:
            self._after()


def dry_run_heartbeat(settings: Settings, env: Environment) -> dict[str, object]:
    scrub = functools.partial(redact, extra_patterns=tuple(settings.cleaning.extra_patterns))
    with open_state(settings, env) as state:
        # A dry run calls no model: the markers extractor stands in and is never asked.
        heartbeat = build_heartbeat(settings, env, state, MarkersExtractor(scrub), dry_run=True)
        report = heartbeat.dry_run()
    report["provider"] = settings.llm.provider
    if settings.llm.provider == "markers":
        # Markers are filed without a model: nothing is sent and nothing is billed.
        report.update(model=None, estimated_input_tokens=0, estimated_cost_usd=0.0)
    return report
