"""One heartbeat, step by step (DESIGN §6): read, clean, chunk, extract, apply, commit.

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

A run-level failure (`UnusableLLMError`: the key refused, the model retired, no credit, the
endpoint's size limit, or `INVALID_ANSWER_STREAK` invalid answers in a row, which show that the
model itself cannot do the task) stops the heartbeat the same way, but counts against no chunk:
invalid answers are held back until a valid one proves the model works (then they are the
chunks' own failures, as they are when the heartbeat ends short of a streak), and a streak drops
them. The problem is recorded in the state database for `status` until an answer disproves it,
and logged as `llm.unusable` when it appears or changes and at most once an hour while it lasts.
"""

from __future__ import annotations

import json
import time as monotonic_time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE, Budget
from memoryd.errors import ConcurrentEditError
from memoryd.extractors import ahead as sending
from memoryd.extractors import sharing
from memoryd.extractors.ahead import Ahead, Flight
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.consumed import ahead_to_commit, cursors_to_commit, record_progress
from memoryd.extractors.counters import ApplyCounters
from memoryd.extractors.extract import InvalidAnswerError, RetryRefusedError
from memoryd.extractors.intake import (
    Cleaner,
    Intake,
    Source,
    chronological,
    read_sources,
    requeued_chunks,
)
from memoryd.extractors.recovery import GENERATION_KEY, HEARTBEAT_INTENT_KEY, finalize_heartbeat
from memoryd.extractors.report import HeartbeatReport, commit_message
from memoryd.llm.base import (
    PermanentLLMError,
    TransientLLMError,
    UnusableLLMError,
    estimate_tokens,
)
from memoryd.llm.prices import PriceTable, Usage
from memoryd.logs import get_logger
from memoryd.state.facade import State
from memoryd.state.meta import clear_unusable_llm, note_unusable_llm, streak_checked_since
from memoryd.store.git import GitStore
from memoryd.store.hosts import record_generation, record_path
from memoryd.store.unit import RUN_TRAILER, UnitOfWork

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.contract import RecordMemories
    from memoryd.extractors.extract import ChunkContext, Extractor
    from memoryd.extractors.pending import PendingOverlay
    from memoryd.store.catalog import EntityCatalog
    from memoryd.store.transaction import FileTransaction

# What only a heartbeat with something to file needs (applying answers, the entity catalogue,
# the tool contract's models, the index) is imported where it is used: an idle heartbeat, a
# subprocess every few minutes, must not pay for it (issue 15). Hence the PLC0415 imports below.

log = get_logger(__name__)

__all__ = ["Heartbeat", "HeartbeatOptions", "HeartbeatReport", "Source"]

SecretScanner = Callable[[str], list[str]]
# Given the transaction, the catalogue, the items.json paths a heartbeat changed and the
# processing date, stage those entities' refreshed summaries and return their refs (the jobs
# layer passes `memoryd.rewrite.refresh.refresh_summaries` with the configured decay rule).
SummaryRefresher = Callable[["FileTransaction", "EntityCatalog", Sequence[str], date], list[str]]
# Reads by agents not filed yet (`memoryd.reading.accesses`): (fact id, agent, day) each.
ReadAccess = tuple[str, str, date]
_MAX_REPLANS = 3
JOURNAL_RETENTION = timedelta(days=14)
# Invalid answers in a row (from different chunks) that show the model cannot do the task. While
# a streak seen within STREAK_RECHECK_INTERVAL says so, one invalid answer confirms it (at most
# two requests a heartbeat); after that a whole streak is needed again, so that a working model
# stuck behind one bad chunk is noticed within the interval.
INVALID_ANSWER_STREAK = 3
STREAK_RECHECK_INTERVAL = timedelta(hours=1)


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
    concurrency: int = 1  # model calls in flight at once (`memoryd.extractors.ahead`)
    sections_per_call: int = 1  # short chunks sharing one call (`memoryd.extractors.sharing`)
    catalog_cache: Path | None = None  # the entity catalogue's cache (in the state directory)


@dataclass
class _Progress:
    """The in-flight state of a heartbeat's processing loop."""

    done: list[str] = field(default_factory=list)  # chunk keys applied in this heartbeat
    held_files: set[str] = field(default_factory=set)  # files whose cursor must not advance
    answers: dict[str, RecordMemories] = field(default_factory=dict)
    # Invalid answers not yet recorded as failures: (chunk, plan, error), oldest first.
    held_back: list[tuple[Chunk, str, str]] = field(default_factory=list)


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
        self.ahead = Ahead(extractor, settings.concurrency)
        self.not_ahead: set[str] = set()  # chunks never to send ahead in this heartbeat
        self._set_aside: list[Flight] = []  # answers given for a context that changed since
        self._proven: bool | None = None  # whether calls may run ahead (see `llm_proven`)
        # Chunks sharing one call, by their first chunk's key, and the answers such a call gave
        # for the chunks after the first (`memoryd.extractors.sharing`).
        self.groups: dict[str, list[Chunk]] = {}
        self.group_answers: dict[str, RecordMemories] = {}
        # Paths of the edits made outside memoryd, committed by this heartbeat: their entities'
        # lines of life/index.md are rendered again (`update_index`).
        self._foreign_paths: list[str] = []
        # Others' edits left uncommitted (withheld by the secret scan): while one is under
        # life/, the entity catalogue is not taken from its snapshot of HEAD.
        self._withheld: set[str] = set()
        # What this heartbeat's commits changed (others' edits and its own): the search index
        # is refreshed from these after it (`memoryd.jobs.reading.refresh_search_after_commit`).
        self.committed_paths: list[str] = []

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
        chunks = chronological(read.chunks + requeued_chunks(self.state))
        self.report.chunks = len(chunks)
        progress = _Progress()
        # Idle: nothing to file and no read position moved. No store session (the entity
        # catalogue is not read), no commit, no model: an idle heartbeat costs a read of the
        # sources' metadata and two rows in the run history.
        # Reads queued by agents are work too: their access bumps are filed by a commit.
        busy = bool(chunks or self.reads or read.new != read.old or not self._record_in_step())
        if busy:
            self._process_replanning(chunks, read, progress)
        self._prune(settle=busy)
        # Left for the next heartbeat by a share of this one, not by a problem or the day's
        # budget: the daemon goes on at once.
        self.report.more_waiting = self.report.more_waiting or (
            read.more and not self.report.stopped_early
        )
        self.report.duration_ms = int((monotonic_time.monotonic() - started) * 1000)
        self.state.runs.finish_report(self.run_id, self.report, finished_at=self.clock())
        log.info("heartbeat.finished", **self.report.log_fields())
        return self.report

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

    def _process_replanning(self, chunks: list[Chunk], read: Intake, progress: _Progress) -> None:
        for attempt in range(_MAX_REPLANS):
            try:
                self._process(chunks, read, progress, replay=attempt > 0)
                break
            except ConcurrentEditError as error:
                # Someone edited a file between our read and our write: re-read and re-apply
                # (answers are reused from the journal, so this costs no model calls).
                log.warning("heartbeat.replanned", path=str(error.path), attempt=attempt + 1)
                again = UnitOfWork(self.git).commit_foreign_edits(self.scan_secrets)
                self._foreign_paths += [*again.committed, *(w.path for w in again.withheld)]
                self._withheld = {w.path for w in again.withheld}
                self.committed_paths += again.committed
        else:
            # The store kept changing under us: nothing of this heartbeat was written; its
            # answers are journalled, so the next heartbeat files them without calling the model.
            self._stop("the store kept changing while memoryd wrote to it")

    def dry_run(self, *, shares_calls: bool = False) -> dict[str, Any]:
        """What a heartbeat would send now: chunks, calls, estimated tokens and cost. Changes
        nothing. With `shares_calls` (a model is asked), short chunks are grouped into calls
        the way a real heartbeat groups them (`memoryd.extractors.sharing`)."""
        read = self._intake(index_mentions=False)
        chunks = [c for c in chronological(read.chunks) if c.has_dialogue]
        fresh = [c for c in chunks if self.state.journal.answered(c.key) is None]
        limit = self.settings.sections_per_call if shares_calls else 1
        calls = sharing.calls_of(fresh, self.settings.chunk_tokens, limit)
        inputs = [
            sum(estimate_tokens(c.render()) for c in call) + PROMPT_TOKENS_ALLOWANCE
            for call in calls
        ]
        costs = [self.budget.estimate(tokens) for tokens in inputs]
        cost = None if None in costs else sum(c for c in costs if c is not None)
        return {
            "chunks": len(chunks),
            "chunks_to_send": len(fresh),
            "estimated_calls": len(calls),
            "estimated_input_tokens": sum(inputs),
            "estimated_cost_usd": None if cost is None else round(cost, 4),
            "model": self.settings.model,
            "by_agent": _count_by(fresh, lambda c: c.agent),
            "days": sorted({c.day.isoformat() for c in fresh}),
        }

    def _intake(self, *, index_mentions: bool) -> Intake:
        return read_sources(
            self.sources,
            self.state,
            clean=self.clean,
            zone=self.settings.zone,
            chunk_tokens=self.settings.chunk_tokens,
            backfill=self.settings.backfill,
            now=self.clock(),
            index_mentions=index_mentions,
        )

    # -- processing ---------------------------------------------------------------------------

    def _process(
        self, chunks: list[Chunk], read: Intake, progress: _Progress, *, replay: bool
    ) -> None:
        from memoryd.extractors.apply import StoreSession  # noqa: PLC0415
        from memoryd.extractors.pending import PendingOverlay  # noqa: PLC0415
        from memoryd.store.catalog_snapshot import followed_paths, save_snapshot  # noqa: PLC0415
        from memoryd.store.index import INDEX_PATH, update_index  # noqa: PLC0415
        from memoryd.store.reads import apply_reads  # noqa: PLC0415

        uow = UnitOfWork(self.git)
        cache = self.settings.catalog_cache
        # Others' edits were just committed: unless some were withheld, the entity folders are
        # HEAD's, and the catalogue may come from its snapshot of HEAD.
        clean = cache is not None and not any(p.startswith("life/") for p in self._withheld)
        session = StoreSession.open(
            uow,
            skills_dir=self.settings.skills_dir,
            tacit_file=self.settings.tacit_file,
            today=self.clock().astimezone(self.settings.zone).date(),
            host_code=self.settings.host_code,
            catalog_cache=cache,
            catalog_head=self.git.head() if clean else None,
            catalog_changes=self.git.changed_since,
        )
        pending = PendingOverlay(self.state.pending)
        counters = ApplyCounters()
        if not replay:
            sharing.plan(self, chunks)
        try:
            self._apply_all(chunks, session, pending, counters, progress, replay=replay)
        finally:
            self.ahead.close()
            sending.settle(self, session, self._set_aside, chunks, progress)
            self._set_aside = []
        self._settle_invalid_answers(progress)
        if self.reads:
            # Reads by agents (search, context, mcp) count as accesses, once per fact, agent
            # and day, recorded in this host's record so that they are never counted twice.
            counters.accesses += apply_reads(
                uow, session.facts, self.settings.host, self.reads, today=session.today
            )
        saved = session.facts.save_all()
        refreshed: list[str] = []
        if self.refresh_summaries is not None and saved:
            refreshed = self.refresh_summaries(uow, session.catalog, saved, session.today)
        # The index lists entities (ref, name, bucket) with their summaries' gists; a heartbeat
        # changes it only by creating or moving entities or refreshing summaries, so the other
        # heartbeats skip reading every summary of the store; and this one reads only the
        # summaries of the entities it changed (or a person did), the other lines are kept.
        moved = counters.entities_created + counters.entities_archived + len(refreshed)
        # Others' changes: this heartbeat's commit of their edits, and the commits made since
        # memoryd's last one that the catalogue's snapshot followed (a person's, a pull). With
        # them known, the index is patched; without (no snapshot), it is checked line by line.
        # An index another commit changed (another host's memoryd, a merge, a person's commit)
        # is checked line by line, not overwritten whole as an uncommitted hand edit is.
        followed = followed_paths(session.catalog)
        others = [*self._foreign_paths, *(p for p in followed or () if p != INDEX_PATH)]
        edited = any(path.startswith("life/") for path in others)
        complete = followed is not None and INDEX_PATH not in followed
        moved += counters.entities_reactivated + edited + (not complete)
        if moved or not uow.exists(INDEX_PATH):
            changed = {*session.catalog.changed_refs(), *refreshed}
            update_index(uow, session.catalog, changed, others, complete=complete)
        self.report.counters = counters
        self._commit(uow, read, progress, pending)
        if cache is not None and self.report.commit and not uow.withheld:
            save_snapshot(session.catalog, cache, self.report.commit)

    def _apply_all(
        self,
        chunks: list[Chunk],
        session: StoreSession,
        pending: PendingOverlay,
        counters: ApplyCounters,
        progress: _Progress,
        *,
        replay: bool,
    ) -> None:
        from memoryd.extractors.apply import apply_answer  # noqa: PLC0415 - see the imports

        stopped = False
        for index, chunk in enumerate(chunks):
            if replay and chunk.key not in progress.answers:
                continue  # a re-plan only re-applies what the first pass applied
            if not replay and not self._should_process(chunk, progress):
                continue
            answer = progress.answers.get(chunk.key)
            if answer is None:
                if stopped or self.should_stop():
                    stopped = stopped or self._stop("shutdown requested")
                    progress.held_files.update(chunk.files)
                    self.report.chunks_deferred += 1
                    continue
                answer = self._answer(chunk, session, progress, chunks[index + 1 :])
                if answer is None:
                    stopped = self.report.stopped_early
                    continue
                progress.answers[chunk.key] = answer
                progress.done.append(chunk.key)
            counters.add(
                apply_answer(
                    answer,
                    chunk,
                    session,
                    pending=pending,
                    mentions=self.state.mentions,
                    min_mentions=self.settings.min_mentions,
                )
            )

    def _should_process(self, chunk: Chunk, progress: _Progress) -> bool:
        record = self.state.journal.get(chunk.key)
        if record is not None and record.state == "committed":
            return False  # filed by an earlier heartbeat whose cursor lagged behind
        if self.state.failures.is_quarantined(chunk.key):
            return False
        if any(path in progress.held_files for path in chunk.files):
            progress.held_files.update(chunk.files)
            self.report.chunks_deferred += 1
            return False  # an earlier chunk of this file failed: the rest waits behind it
        if not chunk.has_dialogue:
            self.report.chunks_empty += 1
            return False
        return True

    @property
    def llm_proven(self) -> bool:
        """Whether a valid answer (in this heartbeat, or recently) shows that the model works:
        until then, calls are not sent ahead (`memoryd.extractors.ahead`)."""
        if self.report.chunks_extracted > 0:
            return True
        if self._proven is None:
            self._proven = sending.proven_recently(self)
        return self._proven

    def _context(self, chunk: Chunk, session: StoreSession) -> ChunkContext:
        from memoryd.extractors.context import build_context  # noqa: PLC0415 - see the imports
        from memoryd.store.skills import INDEX_FILE, agent_folder  # noqa: PLC0415

        return build_context(
            chunk,
            tx=session.tx,
            catalog=session.catalog,
            facts=session.facts,
            max_facts=self.settings.context_facts,
            skills_index_path=f"{agent_folder(self.settings.skills_dir, chunk.agent)}/{INDEX_FILE}",
        )

    def _answer(
        self, chunk: Chunk, session: StoreSession, progress: _Progress, upcoming: list[Chunk]
    ) -> RecordMemories | None:
        """The chunk's validated answer: from the journal if already paid for, else the model
        (asked ahead of time, or now; `memoryd.extractors.ahead`)."""
        handled, shared = sharing.take(self, chunk, session, progress, upcoming)
        if handled:
            return shared  # answered by a call its group shared (or that call failed)
        stored = self.state.journal.answered(chunk.key)
        if stored is not None and stored.answer_json is not None:
            self.report.chunks_reused += 1
            from memoryd.extractors.contract import RecordMemories  # noqa: PLC0415 - see above

            return RecordMemories.model_validate_json(stored.answer_json)
        context = self._context(chunk, session)
        flight = self.ahead.take(chunk.key)
        if flight is not None and flight.context != context:
            # Sent ahead, but a chunk applied since changed what it would be shown: ask again.
            if not flight.future.cancel():
                self._set_aside.append(flight)
            self.report.chunks_reextracted += 1
            flight = None
        if flight is None:
            self.ahead.settle()  # a stale call taken above is not this chunk's call any more
            if not sending.fits_budget(self, chunk):
                # Only the per-heartbeat share is used up when the day's budget still allows
                # the call on its own: more is waiting for the next heartbeat.
                estimate = self.budget.estimate(self._estimate_input(chunk))
                self.report.more_waiting = self.budget.allows_cost(estimate, 0.0)
                self._stop("budget")
                progress.held_files.update(chunk.files)
                return None
            flight = sending.send(self, chunk, context)
            self.ahead.take(chunk.key)  # this chunk's own turn: not in flight for later ones
        sending.send_ahead(self, upcoming, session, progress)
        try:
            return self._awaited_answer(chunk, flight, progress)
        finally:
            self.ahead.settle()

    def _awaited_answer(
        self, chunk: Chunk, flight: Flight, progress: _Progress
    ) -> RecordMemories | None:
        """The answer of the chunk's call, journalled and charged; None when it failed."""
        try:
            extraction = flight.future.result()
        except RetryRefusedError as error:
            self._charge(error.usage, None)
            self._stop("budget")
            progress.held_files.update(chunk.files)
            return None
        except (InvalidAnswerError, TransientLLMError, PermanentLLMError) as error:
            # The failure record keeps the whole chunk (`memoryd retry` rebuilds it from there).
            self._extraction_failed(chunk, sending.full_plan(chunk), error, progress)
            return None
        with self.state.transaction():
            self.state.journal.record_answer(
                chunk.key,
                answer_json=extraction.answer.model_dump_json(),
                usage=extraction.usage,
                model=extraction.model or self.settings.model,
                at=self.clock(),
            )
            self._charge(extraction.usage, extraction.model)
        self.report.chunks_extracted += 1
        if self.report.chunks_extracted == 1:
            sending.note_proven(self)
        self._settle_invalid_answers(progress)  # the model works: they were the chunks' own
        self._answered(valid=True)
        return extraction.answer

    def _extraction_failed(
        self,
        chunk: Chunk,
        plan: str,
        error: InvalidAnswerError | TransientLLMError | PermanentLLMError,
        progress: _Progress,
    ) -> None:
        """No answer for this chunk: it fails (or is held back), or the heartbeat stops."""
        if isinstance(error, InvalidAnswerError):
            self._charge(error.usage, None)
            self._invalid_answer(chunk, plan, error, progress)
        elif isinstance(error, UnusableLLMError):
            self._unusable(error, chunk, progress)
        elif isinstance(error, TransientLLMError):
            self._stop(f"llm: {error}")
            progress.held_files.update(chunk.files)
        else:
            self._fail(chunk, plan, str(error), progress)  # about this request only

    def _charge(self, usage: Usage, model: str | None) -> None:
        cost = self.budget.charge(usage, model, job="heartbeat", run_id=self.run_id)
        self.report.usage = self.report.usage + usage
        self.report.cost_usd += cost

    def _fail(self, chunk: Chunk, plan: str, error: str, progress: _Progress) -> None:
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
        progress.held_files.update(chunk.files)

    def _stop(self, reason: str, outcome: Literal["stopped", "unusable"] = "stopped") -> bool:
        if not self.report.stopped_early:
            self.report.outcome = outcome
            self.report.stop_reason = reason
            if reason == "budget":
                self.budget.log_exhausted_once()
        return True

    # -- run-level LLM problems ---------------------------------------------------------------

    def _invalid_answer(
        self, chunk: Chunk, plan: str, error: InvalidAnswerError, progress: _Progress
    ) -> None:
        """The answer broke the tool contract. A refusal is about this content: the chunk fails
        now. Any other invalid answer is held back (with its chunk's files) until it is known
        whether the chunk or the model is at fault; a streak makes the model unusable."""
        reason = f"{error} | answer: {error.raw_answer}"
        self._answered(valid=False)
        if error.about_content:
            self._fail(chunk, plan, reason, progress)
            return
        progress.held_files.update(chunk.files)
        progress.held_back.append((chunk, plan, reason))
        threshold, whole_streak = self._streak_threshold(error.endpoint)
        if len(progress.held_back) >= threshold:
            unusable = UnusableLLMError.invalid_answers(
                model=self.settings.model,
                endpoint=error.endpoint,
                count=len(progress.held_back),
                reason=error.reason,
            )
            self._unusable(unusable, chunk, progress, streak_checked=whole_streak)

    def _streak_threshold(self, endpoint: str | None) -> tuple[int, bool]:
        """How many invalid answers in a row make the model unusable now, and whether that is a
        whole streak (see INVALID_ANSWER_STREAK)."""
        checked = streak_checked_since(
            self.state.meta, model=self.settings.model, endpoint=endpoint
        )
        if checked is not None and self.clock() - checked < STREAK_RECHECK_INTERVAL:
            return 1, False
        return INVALID_ANSWER_STREAK, True

    def _settle_invalid_answers(self, progress: _Progress) -> None:
        """Record the held-back invalid answers as their chunks' failures: a valid answer
        proved the model works, or the heartbeat ended short of a streak."""
        held, progress.held_back = progress.held_back, []
        for chunk, plan, reason in held:
            self._fail(chunk, plan, reason, progress)

    def _unusable(
        self,
        error: UnusableLLMError,
        chunk: Chunk,
        progress: _Progress,
        *,
        streak_checked: bool = False,
    ) -> None:
        """A run-level problem: stop at once, this chunk's cursor held and the rest deferred,
        with no failure counted (the held-back ones are dropped); record it for `status` and
        tell the operator what to fix (when new or changed, and at most once an hour)."""
        progress.held_files.update(chunk.files)
        progress.held_back.clear()
        self._stop(f"llm unusable ({error.kind}): {error.remedy}", outcome="unusable")
        self.report.unusable = error
        problem = error.problem()
        if note_unusable_llm(self.state.meta, problem, self.clock(), streak_checked=streak_checked):
            log.error("llm.unusable", run_id=self.run_id, **problem)

    def _answered(self, *, valid: bool) -> None:
        """The model answered: forget a recorded problem that the answer disproves."""
        cleared = clear_unusable_llm(self.state.meta, model=self.settings.model, valid_answer=valid)
        if cleared is not None:
            log.info(
                "llm.recovered",
                run_id=self.run_id,
                kind=cleared.get("kind"),
                endpoint=cleared.get("endpoint"),
                model=cleared.get("model"),
                since=cleared.get("since"),
            )

    def _estimate_input(self, chunk: Chunk) -> int:
        # Transcript plus a fixed allowance for the prompt, tool schema and context.
        return estimate_tokens(chunk.render()) + PROMPT_TOKENS_ALLOWANCE

    # -- committing ---------------------------------------------------------------------------

    def _commit(
        self, uow: UnitOfWork, read: Intake, progress: _Progress, pending: PendingOverlay
    ) -> None:
        cursors = cursors_to_commit(self.sources, read, progress.held_files)
        # A source counts as seen once something of it was consumed (a first heartbeat that
        # stopped before consuming anything leaves it to be read from the backfill window).
        seen = sorted(source["key"] for source in cursors if source["cursors"])
        ahead = ahead_to_commit(read, progress.done, progress.held_files)
        generation = record_progress(
            uow,
            host=self.settings.host,
            mirrored=int(self.state.meta.get(GENERATION_KEY) or 0),
            cursors=cursors,
            seen=seen,
            pending=pending.entries_after(),
            ahead=ahead,
        )
        plan = uow.plan()
        changes = pending.staged_changes()
        intent = {
            "run_id": self.run_id,
            "writes": [[w.path, w.sha256] for w in plan],
            "sources": cursors,
            "chunks": progress.done,
            "pending": changes,
            "seen": seen,
            "ahead": ahead,
            "generation": generation,
        }
        with self.state.transaction():
            for key in progress.done:
                self.state.journal.mark_applied(key, run_id=self.run_id, at=self.clock())
            if plan:
                self.state.meta.set_json(HEARTBEAT_INTENT_KEY, intent)
        if plan:
            self.report.commit = uow.apply_and_commit(
                commit_message(self.report.counters),
                {RUN_TRAILER: self.run_id, **self._trailers()},
                scanner=self.scan_secrets,
            )
            self.committed_paths += [write.path for write in plan]
        finalize_heartbeat(self.state, intent, self.report.commit, self.clock())
        self.reads_filed = True
        if self.report.outcome == "nothing-new" and (progress.done or self.report.commit):
            self.report.outcome = "ok"

    def _prune(self, *, settle: bool) -> None:
        # Committed chunks are only looked up again when their file is re-read from a held-back
        # cursor, within a few heartbeats; keeping them (plan and answer) for months would grow
        # the state database without bound. The space goes back to the file system.
        pruned = self.state.journal.prune_committed(self.clock() - JOURNAL_RETENTION)
        # Past conversation-days' texts packed tighter, a share per heartbeat that had work
        # (state/mentions.py): an idle heartbeat stays idle, however much is left to pack.
        settled = (
            self.state.mentions.settle(self.clock().date() - timedelta(days=1)) if settle else 0
        )
        if pruned or settled:
            self.state.db.reclaim_space()
        if pruned:
            log.info("journal.pruned", chunks=pruned)

    def _trailers(self) -> dict[str, str]:
        agents = sorted({source.agent for source in self.sources})
        return {
            "Memoryd-Prompts": ", ".join(self.extractor.prompt_refs),
            "Memoryd-Sources": ", ".join(
                f"{source.agent}:{source.key.split(':', 1)[0]}" for source in self.sources
            )
            or "none",
            "Memoryd-Agents": ", ".join(agents) or "none",
        }


def _count_by(chunks: Sequence[Chunk], key: Callable[[Chunk], str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in chunks:
        counts[key(chunk)] = counts.get(key(chunk), 0) + 1
    return dict(sorted(counts.items()))
