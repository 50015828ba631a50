"""One weekly rewrite over real parts passed in (`memoryd.jobs.rewrite` does the wiring).

A run, in order:

1. a killed predecessor's rewrite is finished or undone (`memoryd.rewrite.recovery`); edits
   others left uncommitted in the store are committed, in their own commit;
2. a pending Message Batch is polled once: still running, the run ends there (outcome
   `batch-pending`, nothing written); ended, its answers are validated and applied, and no new
   batch is submitted in the same run;
3. the selection pass (`memoryd.rewrite.select`) finds the entities whose summary input changed;
   an entity with no hot or warm fact gets the "nothing recent" body without any LLM call;
4. the others are written by the LLM (one call each, one corrective retry after an invalid
   answer; each valid answer journalled with its charge, and one journalled by a killed
   predecessor for the same question reused without a call, `memoryd.rewrite.answers`), or
   sent as one batch with `rewrite.use_batches`, or rendered by the template when the
   provider is `markers`, the LLM is unreachable, or the daily budget is spent (the run says so:
   `template_reason` in `rewrite.finished` and in the commit message);
5. skills indexes, routine files and the tacit file past their bound are consolidated, and the
   tacit file also whenever its bullets changed since its last consolidation (LLM only; an
   answer refused for some content is not asked again until that content changes);
6. `life/index.md` is regenerated; the commit intent is recorded; everything is committed in
   one commit; then the tracking of each rewritten entity (digest, next tier-change date) is
   recorded and an applied batch forgotten, in one database transaction. A run killed after
   its commit has that bookkeeping finished by the next run, so nothing is paid for twice.

A model summary that fails validation twice (or once, from a batch) is refused: the previous
summary stays and the entity is not recorded, so it is selected again on the next run.

A run-level LLM problem (`UnusableLLMError`: a refused key, a retired model, no credit) is not
asked again for every entity: the rest of the run uses the template, a pending batch is kept for
later, the problem is recorded and logged (`llm.unusable`, as the heartbeat does) and the run
ends `unusable` (exit 78).
"""

from __future__ import annotations

import time as monotonic_time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from memoryd.gitrepo import GitStore
from memoryd.llm.base import (
    BatchClient,
    LLMClient,
    PermanentLLMError,
    ToolRequest,
    TransientLLMError,
    UnusableLLMError,
)
from memoryd.llm.prices import PriceTable
from memoryd.logs import get_logger
from memoryd.rewrite import consolidate, summary
from memoryd.rewrite.answers import split_answered
from memoryd.rewrite.asking import SummaryAsker
from memoryd.rewrite.batch import custom_id_for, match_results
from memoryd.rewrite.bounded import consolidate_bounded
from memoryd.rewrite.ledger import JOB, Ledger
from memoryd.rewrite.recovery import (
    CHARGED_KEY_PREFIX,
    REWRITE_INTENT_KEY,
    build_intent,
    finalize_rewrite,
)
from memoryd.rewrite.report import RewriteReport
from memoryd.rewrite.select import Candidate, Mode, select
from memoryd.rewrite.staging import SummaryStage
from memoryd.state.facade import State
from memoryd.store.catalog import EntityCatalog
from memoryd.store.index import write_index
from memoryd.store.summaries import SummaryInput, read_input
from memoryd.store.tiers import TierRule
from memoryd.worktree import RUN_TRAILER, UnitOfWork

log = get_logger(__name__)


@dataclass(frozen=True)
class RewriteOptions:
    zone: ZoneInfo
    rule: TierRule
    model: str
    use_batches: bool
    skills_dir: str
    tacit_file: str
    daily_usd: float = 0.0


class Rewrite:
    """One rewrite run. `client` is None for the markers provider (template only)."""

    def __init__(
        self,
        *,
        settings: RewriteOptions,
        state: State,
        git: GitStore,
        client: LLMClient | None,
        batch_client: BatchClient | None,
        prices: PriceTable,
        clock: Callable[[], datetime],
        scan_secrets: Callable[[str], list[str]],
        scrub: Callable[[str], str],
        run_id: str | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.git = git
        self.client = client
        self.batch_client = batch_client
        self.prices = prices
        self.clock = clock
        self.scan_secrets = scan_secrets
        self.scrub = scrub
        self.run_id = run_id or uuid.uuid4().hex[:16]
        self.report = RewriteReport(self.run_id)
        self.ledger = Ledger(
            state,
            prices,
            model=settings.model,
            daily_usd=settings.daily_usd,
            run_id=self.run_id,
            clock=clock,
        )
        self.today = clock().astimezone(settings.zone).date()
        # One run, one unit of work: everything the run stages is committed together.
        self._uow = UnitOfWork(git)
        self.stage = SummaryStage(self._uow, self.report, clock=clock, scrub=scrub)
        self.asker = SummaryAsker(
            state=state,
            client=client,
            batch_client=batch_client,
            ledger=self.ledger,
            report=self.report,
            stage=self.stage,
            model=settings.model,
            today=self.today,
            clock=clock,
            scrub=scrub,
            run_id=self.run_id,
        )
        self._memos: dict[str, str] = {}
        self._finished_batch: str | None = None

    @property
    def mode(self) -> Mode:
        return "llm" if self.client is not None else "template"

    # -- the run -----------------------------------------------------------------------------

    def run(self, *, poll_only: bool = False) -> RewriteReport:
        """The whole rewrite (see the module docstring); with `poll_only`, only step 2 (and the
        commit of what it applied), for the daemon's periodic poll."""
        started = monotonic_time.monotonic()
        self.state.runs.start(self.run_id, JOB, self.clock())
        log.info("rewrite.started", run_id=self.run_id, mode=self.mode, poll_only=poll_only)
        UnitOfWork(self.git).commit_foreign_edits(self.scan_secrets)
        uow = self._uow
        catalog = EntityCatalog.load(uow)
        handled = self._collect_batch(uow, catalog)
        if self.report.outcome not in ("batch-pending", "stopped") and not poll_only:
            self._rewrite_selected(uow, catalog, handled)
            self._consolidate(uow)
        if self.report.outcome not in ("batch-pending", "stopped"):
            write_index(uow, catalog)
            self._commit(uow)
        self.report.duration_ms = int((monotonic_time.monotonic() - started) * 1000)
        self.state.runs.finish_report(self.run_id, self.report, finished_at=self.clock())
        log.info("rewrite.finished", **self.report.log_fields())
        return self.report

    # -- step 2: a pending batch -------------------------------------------------------------

    def _collect_batch(self, uow: UnitOfWork, catalog: EntityCatalog) -> set[str]:
        pending = self.state.rewrites.pending_batch()
        if pending is None:
            return set()
        if self.batch_client is None:
            # The provider is now `markers`: the batch is kept for when the LLM is back, and
            # this run goes on with the template.
            log.warning("rewrite.batch_unpolled", batch_id=pending.batch_id)
            self.report.batch_pending = pending.batch_id
            return set()
        try:
            status = self.batch_client.batch_status(pending.batch_id)
            if status != "ended":
                self.report.batch_pending = pending.batch_id
                self.report.outcome = "batch-pending"
                return set()
            results = self.batch_client.batch_results(pending.batch_id)
        except (TransientLLMError, UnusableLLMError) as error:
            self._stop_polling(error)  # not the batch's fault: it is kept and polled again
            self.report.batch_pending = pending.batch_id
            return set()
        except PermanentLLMError as error:
            # The batch is gone or unreadable for good (expired, deleted): forget it, so the
            # entities are selected and asked again.
            log.error("rewrite.batch_lost", batch_id=pending.batch_id, error=str(error))
            self._finished_batch = pending.batch_id
            return set()
        matched = match_results(pending.requests, results)
        # A run killed after charging but before forgetting the batch fetches the results
        # again; they were paid once, so they are charged once.
        charged_key = CHARGED_KEY_PREFIX + pending.batch_id
        charge = self.state.meta.get(charged_key) is None
        handled: set[str] = set()
        for answer in matched.answers:
            if answer.result is not None and charge:
                self.asker.charge(answer.result.usage, answer.result.model, batch=True)
            entity = catalog.by_ref(answer.ref)
            if entity is None:
                continue
            current, items = read_input(uow, entity, self.today, self.settings.rule)
            handled.add(answer.ref)
            if custom_id_for(answer.ref, current.digest) != answer.custom_id:
                self.report.stale += 1
                handled.discard(answer.ref)
                continue
            if answer.result is None:
                log.warning("rewrite.batch_item_failed", ref=answer.ref, problem=answer.problem)
                self.report.failed += 1
                handled.discard(answer.ref)
                continue
            try:
                body = summary.validate_summary(
                    summary.summary_from_tool_input(answer.result.tool_input),
                    current.ids,
                    current.hot_ids,
                )
            except summary.InvalidSummaryError as error:
                self.stage.refused(answer.ref, error)
                continue
            self.stage.model_summary(Candidate(current, items, None), body)
        self.state.meta.set(charged_key, "1")
        self._finished_batch = pending.batch_id
        self.report.batch_applied = pending.batch_id
        self.stage.prompts.update(summary.prompt_refs())
        return handled

    # -- steps 3 and 4: summaries ------------------------------------------------------------

    def _rewrite_selected(self, uow: UnitOfWork, catalog: EntityCatalog, handled: set[str]) -> None:
        selection = select(
            uow,
            [e for e in catalog.entities() if e.ref not in handled],
            self.state.rewrites.all(),
            today=self.today,
            rule=self.settings.rule,
            mode=self.mode,
        )
        self.report.entities = selection.entities + len(handled)
        self.report.parsed = selection.parsed
        self.report.selected = len(selection.changed)
        self.report.failed += len(selection.corrupt)
        self.stage.records += selection.refreshed
        asking: list[Candidate] = []
        for candidate in selection.changed:
            if not candidate.input.in_use:
                self.stage.without_facts(candidate, self.mode)
            elif self.client is None:
                self.stage.template(candidate, "markers provider")
            else:
                asking.append(candidate)
        asking = self._reuse_answers(asking)
        if not asking:
            return
        if self.report.outcome == "unusable":  # found polling a batch: nothing more is sent
            for candidate in asking:
                self.stage.template(candidate, self.report.template_reason or "llm unusable")
            return
        if self.settings.use_batches and self.batch_client is not None:
            if self.report.batch_applied is None:
                self.asker.submit_batch(asking)
            return  # with a batch just applied, the rest waits for the next run
        for position, candidate in enumerate(asking):
            if not self.asker.ask(candidate):
                for rest in asking[position:]:
                    self.stage.template(rest, self.report.template_reason or "llm unavailable")
                return

    def _reuse_answers(self, asking: list[Candidate]) -> list[Candidate]:
        """Stage the answers a killed predecessor was given for exactly these questions, drop
        the journalled answers no question of this run matches; return the rest to ask."""
        if not asking:
            return asking
        reuse = split_answered(
            asking, self.state.rewrites.journalled_answers(), model=self.settings.model
        )
        self.state.rewrites.prune_answers(reuse.keep)
        for candidate, body in reuse.answered:
            self.stage.model_summary(candidate, body)
        self.report.reused += len(reuse.answered)
        return reuse.asking

    def summary_request(self, summary_input: SummaryInput, correction: str = "") -> ToolRequest:
        return self.asker.summary_request(summary_input, correction)

    def _stop_polling(self, error: TransientLLMError | UnusableLLMError) -> None:
        if isinstance(error, UnusableLLMError):
            self.asker.unusable(error)
        else:
            self._stop(f"llm: {error}")

    # -- step 5: consolidation ---------------------------------------------------------------

    def _consolidate(self, uow: UnitOfWork) -> None:
        if self.client is None or self.report.template_reason is not None:
            return
        outcome = consolidate_bounded(
            uow,
            self.client,
            self.ledger,
            self.state.meta,
            model=self.settings.model,
            skills_dir=self.settings.skills_dir,
            tacit_file=self.settings.tacit_file,
            today=self.today.isoformat(),
        )
        self.report.usage, self.report.cost_usd = self.ledger.usage, self.ledger.cost_usd
        self.report.llm_calls += outcome.calls
        self.report.consolidated_agents += outcome.agents
        self.report.consolidated_files += outcome.files
        self.report.consolidations_refused += outcome.refused
        self.report.tacit_merged += outcome.tacit.merged
        self.report.tacit_dropped += outcome.tacit.dropped
        self.report.tacit_held += outcome.tacit.held
        self.report.tacit_notes += outcome.tacit.notes
        self._memos.update(outcome.memos)
        if outcome.calls:
            self.stage.prompts.update(consolidate.prompt_refs())

    # -- step 6: commit and record -----------------------------------------------------------

    def _commit(self, uow: UnitOfWork) -> None:
        plan = uow.plan()
        intent = build_intent(
            self.run_id,
            writes=plan,
            records=self.stage.records,
            memos=self._memos,
            finished_batch=self._finished_batch,
            succeeded=self.report.outcome != "failed",
        )
        if plan:
            # Recorded before any file is written: a run killed from here on is finished or
            # undone by the next one (memoryd.rewrite.recovery).
            self.state.meta.set_json(REWRITE_INTENT_KEY, intent)
            trailers = {
                RUN_TRAILER: self.run_id,
                "Memoryd-Prompts": ", ".join(sorted(self.stage.prompts)) or "none",
            }
            self.report.commit = uow.apply_and_commit(
                self.report.commit_message(), trailers, scanner=self.scan_secrets
            )
        finalize_rewrite(self.state, intent, self.clock())
        did_something = (
            self.report.commit or self.report.batch_submitted or self.report.batch_applied
        )
        if self.report.outcome == "nothing-to-do" and did_something:
            self.report.outcome = "ok"

    def _stop(self, reason: str) -> None:
        self.report.outcome = "stopped"
        self.report.stop_reason = reason
