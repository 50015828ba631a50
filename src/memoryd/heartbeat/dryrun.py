"""The whole bill of a backlog: every heartbeat it will take, before any is run.

`whole_backlog` follows the heartbeats a backlog needs without running one: it reads the sources
the way each heartbeat would (`memoryd.extractors.intake.read_sources`, one read share per
source), hands the read positions of one to the next in memory (a source read to its end is
not read again: the next heartbeat would find it as it was left), and stops where a heartbeat
would find nothing more to read. Nothing is stored, no position moves, no model is asked. What a
heartbeat does not know in advance is not predicted: a chunk that fails and holds its file back,
transcripts still being written.

For each predicted heartbeat the chunks are grouped into calls as a heartbeat groups them
(`memoryd.heartbeat.grouping.calls_of`), and each call is priced at the model's price: its
chunks' estimated tokens plus the prompt allowance in, one answer's output tokens out. The output
is the figure that cannot be read off the transcripts: it is the mean of the heartbeat calls the
usage ledger already holds once there are enough of them, else the budget's own guess
(`OUTPUT_TOKENS_GUESS`); the report says which. A call's cost is shared among its chunks in
proportion to their tokens, so the agents' and sources' figures add up to the whole.

How many heartbeats: one per read share, plus those the per-heartbeat ceiling (`budget.
heartbeat_usd`) splits off (a heartbeat stops before the call that would pass it, never before
its first); the daily ceiling spreads them over days. How long: each heartbeat's first call alone
(nothing is sent ahead before a valid answer), the rest `llm.concurrency` at a time, at an
assumed number of seconds per call, which the report states.

The report says when it is an estimate of part (`partial`, with `partial_reasons`): a source
that could not be read, a model without a price, reading that made no progress, or more
heartbeats than it follows (`MAX_HEARTBEATS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memoryd.budget import OUTPUT_TOKENS_GUESS, PROMPT_TOKENS_ALLOWANCE
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.intake import (
    Intake,
    Source,
    chronological,
    read_sources,
    requeued_chunks,
)
from memoryd.heartbeat.grouping import calls_of
from memoryd.llm.prices import ModelPrice

if TYPE_CHECKING:
    from memoryd.heartbeat.engine import Heartbeat

# Seconds one extraction call is assumed to take (a chunk of a few thousand tokens in, one
# answer out, as a small model answers it); only the duration depends on it.
SECONDS_PER_CALL = 8.0
# The heartbeats a dry run follows at most (16 MiB each: 64 GiB of one source).
MAX_HEARTBEATS = 4096
# Heartbeat calls in the ledger needed before their mean output stands in for the guess.
CALIBRATION_CALLS = 5


@dataclass
class Tally:
    """What one agent, one source, or the whole backlog adds up to."""

    chunks: int = 0
    chunks_to_send: int = 0
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    cost_usd: float = 0.0
    largest_chunk_tokens: int = 0

    def as_json(self, *, priced: bool) -> dict[str, Any]:
        return {
            "chunks": self.chunks,
            "chunks_to_send": self.chunks_to_send,
            "input_tokens": round(self.input_tokens),
            "output_tokens": round(self.output_tokens),
            "cost_usd": round(self.cost_usd, 4) if priced else None,
            "largest_chunk_tokens": self.largest_chunk_tokens,
        }


@dataclass(frozen=True)
class Rates:
    """What every call of the backlog is priced and timed by."""

    price: ModelPrice | None  # None: the model has no price
    output_per_call: int
    output_basis: str  # what `output_per_call` rests on
    seconds_per_call: float
    asks_a_model: bool
    shares_calls: bool


@dataclass
class Bill:
    """The backlog's figures as they are added up, heartbeat by heartbeat."""

    total: Tally = field(default_factory=Tally)
    by_agent: dict[str, Tally] = field(default_factory=dict)
    by_source: dict[str, Tally] = field(default_factory=dict)
    source_agents: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    heartbeats: int = 0
    read_shares: int = 0  # heartbeats that one read share per source gives
    budget_splits: int = 0  # heartbeats more, split off by the per-heartbeat ceiling
    seconds: float = 0.0
    largest: dict[str, Any] | None = None
    partial_reasons: list[str] = field(default_factory=list)


def whole_backlog(
    heartbeat: Heartbeat,
    *,
    asks_a_model: bool,
    shares_calls: bool,
    seconds_per_call: float = SECONDS_PER_CALL,
    max_heartbeats: int = MAX_HEARTBEATS,
) -> dict[str, Any]:
    """Given a heartbeat built over real parts, return the bill of everything its sources hold
    that is not filed yet (see the module docstring). Changes nothing."""
    options = heartbeat.settings
    output_per_call, output_basis = _output_per_call(heartbeat) if asks_a_model else (0, "none")
    rates = Rates(
        price=heartbeat.prices.get(options.model) if asks_a_model else ModelPrice(0.0, 0.0),
        output_per_call=output_per_call,
        output_basis=output_basis,
        seconds_per_call=seconds_per_call,
        asks_a_model=asks_a_model,
        shares_calls=shares_calls,
    )
    bill = Bill(source_agents={source.key: source.agent for source in heartbeat.sources})
    for key, agent in bill.source_agents.items():
        bill.by_agent.setdefault(agent, Tally())
        bill.by_source[key] = Tally()
    positions: dict[str, dict[str, str]] = {}
    requeued = requeued_chunks(heartbeat.state)
    pending = list(heartbeat.sources)
    while pending:
        # A source read to its end is not read again: the next heartbeat would find it as this
        # one left it. Each of the others is read on from where the last share stopped.
        chunks, sources_by_file, still = list(requeued), {}, []
        for source in pending:
            read = _read(heartbeat, source, positions)
            for key, reason in sorted(read.unreadable.items()):
                bill.partial_reasons.append(
                    f"source {key} could not be read ({reason}): its backlog is not counted"
                )
            chunks += read.chunks
            sources_by_file.update(read.sources_by_file)
            moved = read.new.get(source.key) != positions.get(source.key)
            if read.more and not moved:
                bill.partial_reasons.append(
                    f"reading source {source.key} made no progress: the rest is not counted"
                )
            elif read.more:
                still.append(source)
            positions[source.key] = read.new.get(source.key, {})
        requeued, pending = [], still
        bill.read_shares += 1
        _add_heartbeat(bill, heartbeat, sources_by_file, chronological(chunks), rates)
        if pending and bill.read_shares >= max_heartbeats:
            bill.partial_reasons.append(
                f"only the first {max_heartbeats} heartbeats were followed: more is waiting"
            )
            break
    if rates.price is None:
        bill.partial_reasons.append(f"model {options.model} has no price: no cost is given")
    return _report(bill, heartbeat, rates)


def _read(heartbeat: Heartbeat, source: Source, positions: dict[str, dict[str, str]]) -> Intake:
    options = heartbeat.settings
    return read_sources(
        [source],
        heartbeat.state,
        clean=heartbeat.clean,
        zone=options.zone,
        chunk_tokens=options.chunk_tokens,
        estimate=options.estimate_tokens,
        backfill=options.backfill,
        now=heartbeat.clock(),
        index_mentions=False,
        read_share=options.read_share,
        positions=positions,
    )


def _output_per_call(heartbeat: Heartbeat) -> tuple[int, str]:
    """The output tokens one call is expected to answer with, and what that figure rests on."""
    done = heartbeat.state.usage.totals_for_job("heartbeat")
    if done.calls >= CALIBRATION_CALLS:
        mean = math.ceil(done.usage.output_tokens / done.calls)
        return mean, f"the mean of the {done.calls} heartbeat calls in the usage ledger"
    return OUTPUT_TOKENS_GUESS, (
        f"a guess ({OUTPUT_TOKENS_GUESS} tokens an answer): the usage ledger holds fewer than "
        f"{CALIBRATION_CALLS} heartbeat calls to measure it by"
    )


def _add_heartbeat(
    bill: Bill,
    heartbeat: Heartbeat,
    sources_by_file: dict[str, str],
    chunks: list[Chunk],
    rates: Rates,
) -> None:
    """Add the chunks one read share gives: their calls, tokens, cost, heartbeats and time."""
    options = heartbeat.settings
    estimate = options.estimate_tokens
    dialogue = [chunk for chunk in chunks if chunk.has_dialogue]
    journal = heartbeat.state.journal
    fresh = {chunk.key for chunk in dialogue if journal.answered(chunk.key) is None}
    sizes = {chunk.key: estimate(chunk.render()) for chunk in dialogue}
    for chunk in dialogue:
        source = sources_by_file.get(chunk.turns[0].provenance.file, "requeued")
        bill.source_agents.setdefault(source, chunk.agent)
        for tally in _tallies(bill, chunk.agent, source):
            tally.chunks += 1
            tally.chunks_to_send += chunk.key in fresh
            tally.largest_chunk_tokens = max(tally.largest_chunk_tokens, sizes[chunk.key])
        if bill.largest is None or sizes[chunk.key] > bill.largest["tokens"]:
            bill.largest = {
                "tokens": sizes[chunk.key],
                "agent": chunk.agent,
                "source": source,
                "session_id": chunk.session_id,
                "day": chunk.day.isoformat(),
            }
    if not rates.asks_a_model:  # markers are filed without a model: no call, no cost
        bill.heartbeats += 1
        return
    to_send = [chunk for chunk in dialogue if chunk.key in fresh]
    limit = options.sections_per_call if rates.shares_calls else 1
    price, output_per_call = rates.price, rates.output_per_call
    calls = calls_of(to_send, options.chunk_tokens, limit, estimate)
    costs = []
    for call in calls:
        tokens_in = sum(sizes[chunk.key] for chunk in call) + PROMPT_TOKENS_ALLOWANCE
        cost = (tokens_in * price.input + output_per_call * price.output) / 1e6 if price else 0.0
        costs.append(cost)
        weight = sum(sizes[chunk.key] for chunk in call)
        for chunk in call:
            share = sizes[chunk.key] / weight if weight else 1 / len(call)
            source = sources_by_file.get(chunk.turns[0].provenance.file, "requeued")
            for tally in _tallies(bill, chunk.agent, source):
                tally.input_tokens += tokens_in * share
                tally.output_tokens += output_per_call * share
                tally.cost_usd += cost * share
    bill.calls += len(calls)
    runs = _split_by_ceiling(costs, options.heartbeat_usd)
    bill.heartbeats += len(runs)
    bill.budget_splits += len(runs) - 1
    concurrency = max(options.concurrency, 1)
    for run in runs:
        if run:  # the first call alone, the others `concurrency` at a time
            bill.seconds += rates.seconds_per_call * (1 + math.ceil((len(run) - 1) / concurrency))


def _tallies(bill: Bill, agent: str, source: str) -> tuple[Tally, Tally, Tally]:
    return (
        bill.total,
        bill.by_agent.setdefault(agent, Tally()),
        bill.by_source.setdefault(source, Tally()),
    )


def _split_by_ceiling(costs: Sequence[float], ceiling: float) -> list[list[float]]:
    """The calls of one read share, as the heartbeats the per-heartbeat ceiling splits them
    into: a heartbeat stops before the call that would pass it, never before its first."""
    runs: list[list[float]] = [[]]
    spent = 0.0
    for cost in costs:
        if ceiling > 0 and runs[-1] and spent + cost > ceiling:
            runs.append([])
            spent = 0.0
        runs[-1].append(cost)
        spent += cost
    return runs


def _report(
    bill: Bill,
    heartbeat: Heartbeat,
    rates: Rates,
) -> dict[str, Any]:
    options = heartbeat.settings
    price = rates.price
    priced = price is not None
    limited_by = []
    if bill.read_shares > 1:
        limited_by.append("read_share")
    if bill.budget_splits:
        limited_by.append("heartbeat_usd")
    daily = options.daily_usd
    days = None
    if daily > 0 and priced:
        left_today = max(daily - heartbeat.budget.spent_today(), 0.0)
        over = bill.total.cost_usd - left_today
        days = 1 if over <= 0 else 1 + math.ceil(over / daily)
        if days > 1:
            limited_by.append("daily_usd")
    return {
        **bill.total.as_json(priced=priced),
        "calls": bill.calls,
        "heartbeats": bill.heartbeats,
        "heartbeats_limited_by": limited_by,
        "read_share_bytes": options.read_share,
        "heartbeat_usd": options.heartbeat_usd,
        "daily_usd": daily,
        "days": days,
        "model": options.model,
        "price_usd_per_mtok": (
            {"input": price.input, "output": price.output} if price is not None else None
        ),
        "input_tokens_per_call_besides_chunks": PROMPT_TOKENS_ALLOWANCE,
        "output_tokens_per_call": rates.output_per_call,
        "output_tokens_basis": rates.output_basis,
        "concurrency": options.concurrency,
        "seconds_per_call": rates.seconds_per_call,
        "estimated_seconds": round(bill.seconds, 1),
        "largest_chunk": bill.largest,
        "by_agent": {
            name: tally.as_json(priced=priced) for name, tally in sorted(bill.by_agent.items())
        },
        "by_source": {
            key: {"agent": bill.source_agents.get(key), **tally.as_json(priced=priced)}
            for key, tally in sorted(bill.by_source.items())
        },
        "partial": bool(bill.partial_reasons),
        "partial_reasons": bill.partial_reasons,
    }
