"""One heartbeat, step by step (docs/heartbeat.md): read, clean, chunk, extract, apply, commit.

The order of events is what makes a heartbeat safe to kill at any moment:

1. (Before the heartbeat starts, the application layer has finished or undone whatever a killed
   job of either kind left half-done: `memoryd.jobs.recovery`.)
2. Edits others left uncommitted in the store are committed in their own commit.
3. Sources are read from their committed cursors; the cleaned text of every conversation-day
   goes into the full-text index (mention counting needs it before anything is filed).
4. Chunks are processed in chronological order. Each chunk's plan is journalled before the model
   is called and its validated answer (with its usage, in the ledger) before it is applied, so an
   answer is never paid for twice: when the same chunk comes back, its stored answer is reused.
   Each answer is applied to one in-memory transaction, so later chunks see earlier ones.
5. The transaction's planned writes, the new cursors and the pending-fact changes are recorded as
   the commit *intent*; then the files are written and committed in one git commit (trailer
   `Memoryd-Run`); then, in one database transaction, cursors advance, chunks are marked
   committed, pending facts change and the intent is dropped.

A chunk that fails for good (an invalid answer twice, a permanent API error) writes nothing and
holds its files' cursors back, so the content after it waits; after `quarantine_after` failed
heartbeats it is quarantined (kept whole in the database for `memoryd retry`) and reading moves
on. A transient failure (the API unreachable, the budget spent) stops the heartbeat: what was
applied so far is committed, and everything after it waits for the next heartbeat.

A run-level failure of the model (`UnusableLLMError`) stops the heartbeat the same way but
counts against no chunk (`memoryd.heartbeat.verdicts`).
"""

from __future__ import annotations

import json
import time as monotonic_time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE, Budget
from memoryd.errors import ConcurrentEditError, PathEscapeError
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.intake import (
    Cleaner,
    Intake,
    Source,
    chronological,
    read_sources,
    requeued_chunks,
)
from memoryd.extractors.recovery import GENERATION_KEY
from memoryd.extractors.report import HeartbeatReport
from memoryd.extractors.rereads import Rereading, rereading_for
from memoryd.gitrepo import GitStore
from memoryd.heartbeat import committing, grouping, processing
from memoryd.heartbeat.ahead import Ahead
from memoryd.heartbeat.keeping import Keeper
from memoryd.heartbeat.processing import ReadAccess, SecretScanner, StoreWork, SummaryRefresher
from memoryd.heartbeat.run import HeartbeatOptions, RunBook
from memoryd.llm.base import LLMError
from memoryd.llm.prices import PriceTable
from memoryd.logs import get_logger
from memoryd.state.facade import State
from memoryd.store.hosts import record_generation, record_path
from memoryd.worktree import UnitOfWork, set_aside_hostile

if TYPE_CHECKING:
    from memoryd.extractors.extract import Extractor
    from memoryd.extractors.llm_extractor import LLMExtractor
    from memoryd.heartbeat.counting import TokenCounter

log = get_logger("memoryd.extractors.heartbeat")  # the name its events always had

__all__ = ["Heartbeat", "HeartbeatOptions", "HeartbeatReport", "Source"]

# Attempts at filing a heartbeat's answers while others keep editing the store under it.
MAX_REPLANS = 3
MAX_SET_ASIDE = 50  # hostile entries set aside by one heartbeat's writes


class Heartbeat:
    """Runs one heartbeat over real parts passed in (`memoryd.jobs.heartbeat` does the wiring)."""

    def __init__(
        self,
        *,
        settings: HeartbeatOptions,
        sources: Sequence[Source],
        state: State,
        git: GitStore,
        extractor: Extractor,
        clean: Cleaner,
        scan_secrets: SecretScanner,
        prices: PriceTable,
        clock: Callable[[], datetime],
        should_stop: Callable[[], bool] = lambda: False,
        run_id: str | None = None,
        refresh_summaries: SummaryRefresher | None = None,
        reads: Sequence[ReadAccess] = (),
    ) -> None:
        self.refresh_summaries = refresh_summaries
        self.reads = list(reads)
        self.reads_filed = False  # set once `reads` are committed (or were all counted before)
        self.settings = settings
        self.sources = list(sources)
        self.state = state
        self.git = git
        self.extractor = extractor
        self.clean = clean
        self.scan_secrets = scan_secrets
        self.prices = prices
        self.clock = clock
        self.should_stop = should_stop
        self.run_id = run_id or uuid.uuid4().hex[:16]
        self.report = HeartbeatReport(self.run_id)
        self.budget = Budget(
            settings.daily_usd, settings.heartbeat_usd, settings.model, prices, state, clock
        )
        # Paths of the edits made outside memoryd, committed by this heartbeat: their entities'
        # lines of life/index.md are rendered again (`update_index`).
        self._foreign_paths: list[str] = []
        # Others' edits left uncommitted (withheld by the secret scan): while one is under
        # life/, the entity catalogue is not taken from its snapshot of HEAD.
        self._withheld: set[str] = set()
        # What this heartbeat's commits changed (others' edits and its own): the search index
        # is refreshed from these after it (`memoryd.jobs.reading.refresh_search_after_commit`).
        self.committed_paths: list[str] = []
        # Reprocess requests this heartbeat reads history again for (`memoryd reprocess`).
        self._rereading = Rereading([])

    # -- the whole heartbeat ------------------------------------------------------------------

    def run(self) -> HeartbeatReport:
        started = monotonic_time.monotonic()
        now = self.clock()
        self.state.runs.start(self.run_id, "heartbeat", now)
        log.info("heartbeat.started", run_id=self.run_id)
        foreign = UnitOfWork(self.git).commit_foreign_edits(self.scan_secrets)
        self.report.foreign_commit = foreign.commit
        self._foreign_paths = [*foreign.committed, *(w.path for w in foreign.withheld)]
        self._withheld = {w.path for w in foreign.withheld}
        self.committed_paths += foreign.committed
        read = self._intake(index_mentions=True)
        self.report.sources_unreadable = dict(read.unreadable)
        self._rereading = self._reread()
        requeued = requeued_chunks(self.state)
        chunks = chronological(read.chunks + requeued + self._rereading.all_chunks)
        self.report.chunks = len(chunks)
        book = RunBook(
            settings=self.settings,
            state=self.state,
            extractor=self.extractor,
            budget=self.budget,
            report=self.report,
            clock=self.clock,
            should_stop=self.should_stop,
            ahead=Ahead(self.extractor, self.settings.concurrency, self._keeper()),
        )
        # Idle: nothing to file and no read position moved. No store session (the entity
        # catalogue is not read), no commit, no model: an idle heartbeat costs a read of the
        # sources' metadata and two rows in the run history.
        # Reads queued by agents are work too: their access bumps are filed by a commit.
        busy = bool(chunks or self.reads or read.new != read.old or not self._record_in_step())
        busy = busy or bool(self._rereading.requests)  # a request with nothing left is closed
        if busy:
            self._process_replanning(book, chunks, read)
        committing.prune(book, settle=busy)
        # Left for the next heartbeat by a share of this one, not by a problem or the day's
        # budget: the daemon goes on at once.
        self.report.more_waiting = self.report.more_waiting or (
            read.more and not self.report.stopped_early
        )
        self.report.duration_ms = int((monotonic_time.monotonic() - started) * 1000)
        self.state.runs.finish_report(self.run_id, self.report, finished_at=self.clock())
        log.info("heartbeat.finished", **self.report.log_fields())
        return self.report

    def _keeper(self) -> Keeper | None:
        """Who journals answers on the threads that receive them (calls sent ahead only)."""
        if self.settings.concurrency <= 1:
            return None
        return Keeper(
            self.state.db.path,
            self.budget,
            run_id=self.run_id,
            clock=self.clock,
            model=self.settings.model,
        )

    def _record_in_step(self) -> bool:
        """Whether this host's record in the store is the one the state database mirrors (else
        even a heartbeat with nothing new commits it: a database adopted or rebuilt)."""
        text = UnitOfWork(self.git).read_text(record_path(self.settings.host))
        generation = record_generation(text) if text is not None else None
        try:
            if generation is None and text is not None:  # not canonical: parse it
                generation = json.loads(text)["generation"]
        except (ValueError, TypeError, KeyError):
            return False  # the full reader says what is wrong with it, on the commit path
        return generation == int(self.state.meta.get(GENERATION_KEY) or 0)

    def _process_replanning(self, book: RunBook, chunks: list[Chunk], read: Intake) -> None:
        # A planted link or FIFO set aside costs a re-plan too, but not one of the MAX_REPLANS
        # kept for edits racing ours: each entry is set aside once, so they are bounded apart.
        attempt = set_aside = 0
        while attempt < MAX_REPLANS:
            try:
                self.committed_paths += processing.process(
                    book, self._store_work(), chunks, read, replay=attempt + set_aside > 0
                )
            except (ConcurrentEditError, PathEscapeError) as error:
                # Someone edited a file between our read and our write, or planted a link or a
                # FIFO on the way to one (set aside, out of the store, or else the error stands):
                # re-read and re-apply (answers are reused from the journal: no model calls).
                if isinstance(error, ConcurrentEditError):
                    attempt += 1
                elif set_aside < MAX_SET_ASIDE and set_aside_hostile(self.git, error.path):
                    set_aside += 1
                else:
                    raise
                log.warning(
                    "heartbeat.replanned", path=str(error.path), attempt=attempt + set_aside
                )
                again = UnitOfWork(self.git).commit_foreign_edits(self.scan_secrets)
                self._foreign_paths += [*again.committed, *(w.path for w in again.withheld)]
                self._withheld = {w.path for w in again.withheld}
                self.committed_paths += again.committed
            else:
                self.reads_filed = True
                return
        # The store kept changing under us: nothing of this heartbeat was written; its
        # answers are journalled, so the next heartbeat files them without calling the model.
        book.stop("the store kept changing while memoryd wrote to it")

    def _store_work(self) -> StoreWork:
        return StoreWork(
            git=self.git,
            sources=self.sources,
            scan_secrets=self.scan_secrets,
            prompt_refs=self.extractor.prompt_refs,
            reads=self.reads,
            refresh_summaries=self.refresh_summaries,
            foreign_paths=tuple(self._foreign_paths),
            withheld=frozenset(self._withheld),
            rereading=self._rereading,
        )

    def _reread(self) -> Rereading:
        return rereading_for(
            UnitOfWork(self.git),
            self.settings.host,
            self.sources,
            clean=self.clean,
            zone=self.settings.zone,
            chunk_tokens=self.settings.chunk_tokens,
            estimate=self.settings.estimate_tokens,
        )

    def dry_run(
        self,
        *,
        shares_calls: bool = False,
        counting: tuple[LLMExtractor, TokenCounter] | None = None,
    ) -> dict[str, Any]:
        """What a heartbeat would send now: chunks, calls, estimated tokens and cost. Changes
        nothing. With `shares_calls` (a model is asked), short chunks are grouped into calls
        the way a real heartbeat groups them (`memoryd.heartbeat.sharing`). With `counting` (the
        extractor that builds the requests and what counts their tokens, the endpoint:
        `memoryd.heartbeat.counting`), the counted tokens and cost are added; when counting
        fails the estimate stands, with a note saying why."""
        read = self._intake(index_mentions=False)
        chunks = [c for c in chronological(read.chunks) if c.has_dialogue]
        fresh = [c for c in chunks if self.state.journal.answered(c.key) is None]
        limit = self.settings.sections_per_call if shares_calls else 1
        estimate = self.settings.estimate_tokens
        calls = grouping.calls_of(fresh, self.settings.chunk_tokens, limit, estimate)
        inputs = [
            sum(estimate(c.render()) for c in call) + PROMPT_TOKENS_ALLOWANCE for call in calls
        ]
        report = {
            "chunks": len(chunks),
            "chunks_to_send": len(fresh),
            "estimated_calls": len(calls),
            "estimated_input_tokens": sum(inputs),
            "estimated_cost_usd": self._cost_of(inputs),
            "model": self.settings.model,
            "by_agent": _count_by(fresh, lambda c: c.agent),
            "days": sorted({c.day.isoformat() for c in fresh}),
        }
        if counting is not None:
            report.update(_counted(calls, lambda c: self._count(c, *counting), self._cost_of))
        return report

    def _count(
        self, calls: list[list[Chunk]], extractor: LLMExtractor, counter: TokenCounter
    ) -> list[int]:
        # Imported here: only an online dry run builds requests to count.
        from memoryd.heartbeat.counting import count_calls  # noqa: PLC0415

        options = self.settings
        return count_calls(
            calls,
            git=self.git,
            options=options,
            clock=self.clock,
            extractor=extractor,
            counter=counter,
        )

    def _cost_of(self, inputs: Sequence[int]) -> float | None:
        """The estimated cost of calls with these input tokens (None for an unpriced model)."""
        costs = [self.budget.estimate(tokens) for tokens in inputs]
        return None if None in costs else round(sum(c for c in costs if c is not None), 4)

    def _intake(self, *, index_mentions: bool) -> Intake:
        return read_sources(
            self.sources,
            self.state,
            clean=self.clean,
            zone=self.settings.zone,
            chunk_tokens=self.settings.chunk_tokens,
            estimate=self.settings.estimate_tokens,
            backfill=self.settings.backfill,
            now=self.clock(),
            index_mentions=index_mentions,
            read_share=self.settings.read_share,
        )


def _counted(
    calls: list[list[Chunk]],
    count: Callable[[list[list[Chunk]]], list[int]],
    cost_of: Callable[[Sequence[int]], float | None],
) -> dict[str, Any]:
    """The dry run's figures from the endpoint's count, or a note saying why there are none."""
    if not calls:
        return {"token_count": "count_tokens", "counted_input_tokens": 0, "counted_cost_usd": 0.0}
    try:
        counted = count(calls)
    except LLMError as error:
        return {
            "token_count": "estimate",
            "token_count_note": f"the endpoint could not count tokens ({error}); "
            "estimated_input_tokens is memoryd's own estimate",
        }
    # The output is not counted: the budget's usual guess of it is priced in, as for the estimate.
    return {
        "token_count": "count_tokens",
        "counted_input_tokens": sum(counted),
        "counted_cost_usd": cost_of(counted),
    }


def _count_by(chunks: Sequence[Chunk], key: Callable[[Chunk], str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in chunks:
        counts[key(chunk)] = counts.get(key(chunk), 0) + 1
    return dict(sorted(counts.items()))
