"""One heartbeat run's bookkeeping, handed explicitly to every step of the engine.

The steps (`sending`, `verdicts`, `sharing`, `answers`, `committing`, `processing`) are plain
functions; what they share about the run in progress lives in one `RunBook`: the report, the
budget and what it was charged, the chunks applied and the files held back, the calls in flight
and those set aside, and the rules for a chunk that fails or a run that stops. Keeping it in one
object below the steps lets them depend on it, not on the engine nor on each other's internals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE, Budget
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import Extractor
from memoryd.extractors.report import HeartbeatReport
from memoryd.heartbeat.ahead import Ahead
from memoryd.heartbeat.grouping import SharedAnswer
from memoryd.llm.prices import Usage
from memoryd.llm.tokens import scaled_estimate
from memoryd.logs import get_logger
from memoryd.sources.reader import DEFAULT_MAX_BYTES
from memoryd.state.facade import State
from memoryd.state.meta import unusable_llm

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.contract import RecordMemories
    from memoryd.extractors.extract import ChunkContext

log = get_logger("memoryd.extractors.heartbeat")  # the name its events always had

# When the model last gave a valid answer (`model|instant`): within PROVEN_FOR, and with no
# run-level problem recorded since, a heartbeat sends ahead from its first call.
PROVEN_KEY = "llm.last_valid_answer"
PROVEN_FOR = timedelta(hours=1)


@dataclass(frozen=True)
class HeartbeatOptions:
    zone: ZoneInfo
    chunk_tokens: int
    context_facts: int
    min_mentions: int
    skills_dir: str
    tacit_file: str
    backfill: timedelta | None
    daily_usd: float
    heartbeat_usd: float
    model: str
    host: str = "localhost"  # the name of this host's record in the store
    host_code: int | None = None  # fact ids in this host's range (a store shared by hosts)
    quarantine_after: int = 3
    concurrency: int = 1  # model calls in flight at once (`memoryd.heartbeat.ahead`)
    sections_per_call: int = 1  # short chunks sharing one call (`memoryd.heartbeat.sharing`)
    catalog_cache: Path | None = None  # the entity catalogue's cache (in the state directory)
    keep_catalog: bool = False  # kept in memory for the process's next heartbeat (the daemon)
    # The model's tokens per chars/4 estimate token (`memoryd.llm.tokens`); `chunk_tokens` and
    # every estimate are in the model's tokens.
    token_factor: float = 1.0
    # The configured agents' names: a queued read by any other is refused (`store.reads`);
    # None accepts every name.
    agents: frozenset[str] | None = None
    # At most about this many bytes read from each source by one heartbeat (its read share).
    read_share: int = DEFAULT_MAX_BYTES

    def estimate_tokens(self, text: str) -> int:
        """The estimated tokens of `text` in the model's tokenizer."""
        return scaled_estimate(text, self.token_factor)


@dataclass
class RunBook:
    """What one heartbeat run knows about itself while its chunks are processed."""

    settings: HeartbeatOptions
    state: State
    extractor: Extractor
    budget: Budget
    report: HeartbeatReport
    clock: Callable[[], datetime]
    should_stop: Callable[[], bool]
    ahead: Ahead
    done: list[str] = field(default_factory=list)  # chunk keys applied in this heartbeat
    held_files: set[str] = field(default_factory=set)  # files whose cursor must not advance
    answers: dict[str, RecordMemories] = field(default_factory=dict)
    # Invalid answers not yet recorded as failures: (chunk, plan, error), oldest first.
    held_back: list[tuple[Chunk, str, str]] = field(default_factory=list)
    not_ahead: set[str] = field(default_factory=set)  # chunks never to send ahead in this run
    # Chunks sharing one call, by their first chunk's key, and the answers such a call gave
    # for the chunks after the first (`memoryd.heartbeat.sharing`).
    groups: dict[str, list[Chunk]] = field(default_factory=dict)
    group_answers: dict[str, SharedAnswer] = field(default_factory=dict)
    proven: bool | None = None  # whether calls may run ahead (see `llm_proven`), once known

    @property
    def run_id(self) -> str:
        return self.report.run_id

    def hold(self, chunk: Chunk) -> None:
        """The chunk's files keep their cursors: the content after it waits."""
        self.held_files.update(chunk.files)

    def charge(self, usage: Usage, model: str | None) -> None:
        """Record what a call cost, in the ledger and the report."""
        self.count_charge(
            usage, self.budget.charge(usage, model, job="heartbeat", run_id=self.run_id)
        )

    def count_charge(self, usage: Usage, cost: float) -> None:
        """Count in the report a call already recorded in the ledger."""
        self.report.usage = self.report.usage + usage
        self.report.cost_usd += cost

    def fail(self, chunk: Chunk, plan: str, error: str) -> None:
        """The chunk failed for good in this heartbeat: count it, quarantine it past the
        threshold (reading moves on), else hold its files back."""
        record = self.state.failures.record_failure(
            chunk.key,
            run_id=self.run_id,
            error=error,
            plan_json=plan,
            at=self.clock(),
            threshold=self.settings.quarantine_after,
        )
        self.report.chunks_failed += 1
        if not self.report.stopped_early:
            self.report.outcome = "failed"
        if record.quarantined:
            # Quarantined chunks are kept whole in the database; reading moves on past them.
            if record.newly_quarantined:
                self.report.chunks_quarantined += 1
                log.error(
                    "chunk.quarantined",
                    chunk_key=chunk.key,
                    agent=chunk.agent,
                    session=chunk.session_id,
                    day=chunk.day.isoformat(),
                    failures=record.failures,
                    error=error[:500],
                )
            return
        log.warning(
            "chunk.failed", chunk_key=chunk.key, failures=record.failures, error=error[:500]
        )
        self.hold(chunk)

    def stop(self, reason: str, outcome: Literal["stopped", "unusable"] = "stopped") -> bool:
        """Stop the run (the first reason wins); what was applied is still committed."""
        if not self.report.stopped_early:
            self.report.outcome = outcome
            self.report.stop_reason = reason
            if reason == "budget":
                self.budget.log_exhausted_once()
        return True

    def context(self, chunk: Chunk, session: StoreSession) -> ChunkContext:
        """What the model is shown with the chunk, as the store offers it now."""
        # Imported here: an idle heartbeat never builds a context and must not pay for these.
        from memoryd.extractors.context import build_context  # noqa: PLC0415
        from memoryd.store.skills import INDEX_FILE, agent_folder  # noqa: PLC0415

        return build_context(
            chunk,
            tx=session.tx,
            catalog=session.catalog,
            facts=session.facts,
            max_facts=self.settings.context_facts,
            skills_index_path=f"{agent_folder(self.settings.skills_dir, chunk.agent)}/{INDEX_FILE}",
            tacit_path=session.tacit_file,
        )

    def estimate(self, chunk: Chunk) -> float | None:
        """The estimated cost of the chunk's call: its transcript plus a fixed allowance for
        the prompt, tool schema and context."""
        tokens = self.settings.estimate_tokens(chunk.render())
        return self.budget.estimate(tokens + PROMPT_TOKENS_ALLOWANCE)

    @property
    def llm_proven(self) -> bool:
        """Whether a valid answer (in this heartbeat, or recently) shows that the model works:
        until then, calls are not sent ahead (`memoryd.heartbeat.sending`)."""
        if self.report.chunks_extracted > 0:
            return True
        if self.proven is None:
            self.proven = self._proven_recently()
        return self.proven

    def _proven_recently(self) -> bool:
        """Whether the model gave a valid answer within PROVEN_FOR and no run-level problem is
        recorded: then the heartbeat sends ahead from its first call (a backfill the daemon
        runs as many heartbeats does not wait for one call alone in each)."""
        if unusable_llm(self.state.meta) is not None:
            return False
        model, _, at = (self.state.meta.get(PROVEN_KEY) or "").rpartition("|")
        try:
            when = datetime.fromisoformat(at)
        except ValueError:
            return False
        return model == self.settings.model and timedelta(0) <= self.clock() - when <= PROVEN_FOR

    def note_extracted(self, count: int) -> None:
        """Valid answers for `count` chunks; after the heartbeat's first, the model works."""
        first = self.report.chunks_extracted == 0
        self.report.chunks_extracted += count
        if first:
            self.state.meta.set(PROVEN_KEY, f"{self.settings.model}|{self.clock().isoformat()}")
