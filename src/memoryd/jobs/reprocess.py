"""`memoryd reprocess`: record a request to read history again, or price it (docs/cli.md).

The command does not read anything itself: it checks what the operator chose (an agent, one of
its sources, a range of days), then records a request in the store (`memoryd.store.reprocess`)
in a commit of its own (trailer `Memoryd-Reprocess`), under the single-writer lock, inside a
writing session like any command that writes the store. The following heartbeats read the
chosen history again through the normal pipeline (`memoryd.extractors.rereads`), with the
current provider, model and prompts, so the budget, the journal and crash safety apply.

The dry run reads the chosen history now and prices all of it at once, as the heartbeat's dry
run prices one heartbeat: the same chunking, call sharing, token estimate and price.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from memoryd.budget import OUTPUT_TOKENS_GUESS, PROMPT_TOKENS_ALLOWANCE
from memoryd.errors import EXIT_USAGE, MemorydError
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.rereads import read_again
from memoryd.heartbeat import grouping
from memoryd.jobs.environment import Environment, host_name
from memoryd.jobs.heartbeat import heartbeat_options
from memoryd.jobs.parts import make_cleaner, make_scanner
from memoryd.jobs.session import writing_session
from memoryd.jobs.sources import build_sources
from memoryd.llm.prices import ModelPrice
from memoryd.logs import get_logger
from memoryd.settings import Settings
from memoryd.store.reprocess import REPROCESS_TRAILER, ReprocessRequest, write_request
from memoryd.worktree import RUN_TRAILER, UnitOfWork

log = get_logger(__name__)


class ReprocessUsageError(MemorydError):
    """What `memoryd reprocess` was asked to read again does not exist or makes no sense."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Selection:
    """The history to read again; None reads all of it."""

    agent: str | None = None
    source: str | None = None
    since: date | None = None
    until: date | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "agent": self.agent,
            "source": self.source,
            "since": None if self.since is None else self.since.isoformat(),
            "until": None if self.until is None else self.until.isoformat(),
        }


def selection_from(
    settings: Settings,
    *,
    agent: str | None,
    source: str | None,
    since: str | None,
    until: str | None,
) -> Selection:
    """The operator's choice, checked against the configuration. Raise ReprocessUsageError,
    saying what is wrong and what would be right, for an unknown agent or source, a date that
    is not YYYY-MM-DD, or `until` before `since`."""
    names = [configured.name for configured in settings.agents]
    if agent is not None and agent not in names:
        known = ", ".join(names) or "none"
        raise ReprocessUsageError(f"no agent {agent!r} in the configuration (agents: {known})")
    paths = [
        str(configured.path)
        for each in settings.agents
        if agent is None or each.name == agent
        for configured in each.sources
    ]
    if source is not None and source not in paths:
        whose = f"agent {agent!r}" if agent is not None else "any agent"
        known = ", ".join(paths) or "none"
        raise ReprocessUsageError(
            f"no source {source!r} configured for {whose} (sources: {known}); "
            "give the path as it is written in the configuration"
        )
    first, last = _day("--since", since), _day("--until", until)
    if first is not None and last is not None and last < first:
        raise ReprocessUsageError(f"--until {last} is before --since {first}")
    return Selection(agent=agent, source=source, since=first, until=last)


def _day(flag: str, text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ReprocessUsageError(
            f"{flag} {text!r} is not a date: write it as YYYY-MM-DD (in schedule.timezone)"
        ) from None


def new_request(
    settings: Settings, env: Environment, selection: Selection, request_id: str
) -> ReprocessRequest:
    return ReprocessRequest(
        id=request_id,
        host=host_name(settings, env),
        requested=env.clock(),
        agent=selection.agent,
        source=selection.source,
        since=selection.since,
        until=selection.until,
    )


def record_request(
    settings: Settings, env: Environment, request: ReprocessRequest, *, run_id: str
) -> tuple[str | None, str | None]:
    """Commit the request to the store; return the commit and a sync problem, if any. The
    caller holds the single-writer lock."""
    with writing_session(settings, env) as session:
        UnitOfWork(session.git).commit_foreign_edits(make_scanner(settings))
        uow = UnitOfWork(session.git)
        write_request(uow, request)
        commit = uow.apply_and_commit(
            f"reprocess: read {_what(request)} again",
            {RUN_TRAILER: run_id, REPROCESS_TRAILER: request.id},
            scanner=make_scanner(settings),
        )
        session.record_commit(commit)
    log.info(
        "reprocess.requested",
        request=request.id,
        agent=request.agent,
        source=request.source,
        since=None if request.since is None else request.since.isoformat(),
        until=None if request.until is None else request.until.isoformat(),
        commit=commit,
    )
    return commit, session.sync_problem


def _what(request: ReprocessRequest) -> str:
    parts = [f"agent {request.agent}" if request.agent else "every agent"]
    if request.source:
        parts.append(f"source {request.source}")
    if request.since or request.until:
        parts.append(f"days {request.since or 'start'}..{request.until or 'now'}")
    return ", ".join(parts)


def price_reprocess(
    settings: Settings, env: Environment, selection: Selection, request_id: str
) -> dict[str, Any]:
    """What reading the selection again would send, all heartbeats of it together: chunks,
    calls, estimated tokens and cost, with the model and price used. Changes nothing."""
    host = host_name(settings, env)
    options = heartbeat_options(settings, host)
    request = new_request(settings, env, selection, request_id)
    rereading = read_again(
        [request],
        build_sources(settings),
        clean=make_cleaner(settings),
        zone=options.zone,
        chunk_tokens=options.chunk_tokens,
        estimate=options.estimate_tokens,
    )
    chunks = [chunk for chunk in rereading.all_chunks if chunk.has_dialogue]
    asks_a_model = settings.llm.provider != "markers"
    limit = options.sections_per_call if asks_a_model else 1
    calls = grouping.calls_of(chunks, options.chunk_tokens, limit, options.estimate_tokens)
    inputs = [
        sum(options.estimate_tokens(c.render()) for c in call) + PROMPT_TOKENS_ALLOWANCE
        for call in calls
    ]
    price = settings.llm.price_table().get(settings.llm.model) if asks_a_model else None
    report: dict[str, Any] = {
        "selection": selection.to_json(),
        "provider": settings.llm.provider,
        "model": settings.llm.model if asks_a_model else None,
        "chunks": len(chunks),
        "estimated_calls": len(calls) if asks_a_model else 0,
        "estimated_input_tokens": sum(inputs) if asks_a_model else 0,
        "estimated_cost_usd": _cost(inputs, price) if asks_a_model else 0.0,
        "price_usd_per_million_tokens": None
        if price is None
        else {"input": price.input, "output": price.output},
        "largest_chunk_tokens": max(
            (options.estimate_tokens(c.render()) for c in chunks), default=0
        ),
        "by_agent": _count_by(chunks, lambda c: c.agent),
        "by_file": _count_by(chunks, lambda c: c.files[0]),
        "first_day": min((c.day for c in chunks), default=None),
        "last_day": max((c.day for c in chunks), default=None),
    }
    for key in ("first_day", "last_day"):
        day = report[key]
        report[key] = None if day is None else day.isoformat()
    if asks_a_model and price is None:
        report["note"] = f"no price known for {settings.llm.model}: add it to llm.prices"
    return report


def _cost(inputs: list[int], price: ModelPrice | None) -> float | None:
    if price is None:
        return None
    total = sum(tokens * price.input + OUTPUT_TOKENS_GUESS * price.output for tokens in inputs)
    return round(total / 1e6, 4)


def _count_by(chunks: list[Chunk], key: Callable[[Chunk], str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in chunks:
        name = key(chunk)
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))
