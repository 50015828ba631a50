"""Steps 3 and 4 of the weekly rewrite, the part that talks to the model: one summary asked at
a time (one corrective retry, each valid answer journalled with its charge), or all of them
sent as one Message Batch; the budget checked before each request, and a refused request or
an unusable LLM turned into the template for the rest of the run. Apart from `engine`, which
orders the run and decides who is asked at all.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

from memoryd.llm.base import (
    BatchClient,
    LLMClient,
    PermanentLLMError,
    ToolRequest,
    TransientLLMError,
    UnusableLLMError,
)
from memoryd.llm.prices import Usage
from memoryd.logs import get_logger
from memoryd.rewrite import summary
from memoryd.rewrite.answers import asked_digest
from memoryd.rewrite.batch import custom_id_for
from memoryd.rewrite.ledger import JOB, Ledger
from memoryd.rewrite.report import RewriteReport
from memoryd.rewrite.select import Candidate
from memoryd.rewrite.staging import SummaryStage
from memoryd.state.facade import State
from memoryd.state.meta import clear_unusable_llm, note_unusable_llm
from memoryd.store.summaries import SummaryInput

log = get_logger("memoryd.rewrite.engine")  # the run's logger: its events keep their name


class SummaryAsker:
    """Asks the model for summaries on behalf of one rewrite run, recording into its report,
    its stage and its ledger."""

    def __init__(
        self,
        *,
        state: State,
        client: LLMClient | None,
        batch_client: BatchClient | None,
        ledger: Ledger,
        report: RewriteReport,
        stage: SummaryStage,
        model: str,
        today: date,
        clock: Callable[[], datetime],
        scrub: Callable[[str], str],
        run_id: str,
    ) -> None:
        self.state = state
        self.client = client
        self.batch_client = batch_client
        self.ledger = ledger
        self.report = report
        self.stage = stage
        self.model = model
        self.today = today
        self.clock = clock
        self.scrub = scrub
        self.run_id = run_id

    def summary_request(self, summary_input: SummaryInput, correction: str = "") -> ToolRequest:
        return summary.build_request(
            summary_input,
            model=self.model,
            today=self.today.isoformat(),
            correction=correction,
        )

    def ask(self, candidate: Candidate) -> bool:
        """Write one summary through the LLM. Return False when the LLM cannot be used any
        more in this run (the caller falls back to the template for the rest)."""
        assert self.client is not None  # noqa: S101 - only called in llm mode
        correction = ""
        for attempt in (1, 2):
            request = self.summary_request(candidate.input, correction)
            if not self.ledger.within_budget([request]):
                self.report.template_reason = "daily budget spent"
                return False
            try:
                result = self.client.call_tool(request)
            except TransientLLMError as error:
                log.warning("rewrite.llm_unavailable", error=str(error))
                self.report.template_reason = "llm unreachable"
                return False
            except PermanentLLMError as error:
                self.refused(error)
                return False
            self.report.llm_calls += 1
            clear_unusable_llm(self.state.meta, model=request.model, valid_answer=False)
            self.stage.prompts.update(summary.prompt_refs())
            try:
                body = summary.validate_summary(
                    summary.summary_from_tool_input(result.tool_input),
                    candidate.input.ids,
                    candidate.input.hot_ids,
                )
            except summary.InvalidSummaryError as error:
                self.charge(result.usage, result.model, batch=False)
                if attempt == 2:
                    self.stage.refused(candidate.input.entity.ref, error)
                    return True
                correction = summary.correction_for(error)
                continue
            # Journalled with its charge: a run killed from here on reuses this answer, so it
            # is paid for exactly once.
            with self.state.transaction():
                self.charge(result.usage, result.model, batch=False)
                self.state.rewrites.journal_answer(
                    candidate.input.entity.ref,
                    asked_digest=asked_digest(candidate.input, model=self.model),
                    body=self.scrub(body),  # the state database keeps no secret either
                    run_id=self.run_id,
                    answered_at=self.clock(),
                )
            self.stage.model_summary(candidate, body)
            return True
        return True

    def refused(self, error: PermanentLLMError) -> None:
        """The LLM refused a request for good; the template stands in for the rest."""
        if isinstance(error, UnusableLLMError):
            self.unusable(error)
            return
        log.error("rewrite.llm_refused", error=str(error))
        self.report.template_reason = "llm refused the request"
        self.report.outcome = "failed"

    def unusable(self, error: UnusableLLMError) -> None:
        """The LLM cannot be used in this run: nothing more is sent, the template stands in,
        and the operator is told what to fix (when new or changed, at most once an hour)."""
        self.report.outcome = "unusable"
        self.report.template_reason = f"llm unusable ({error.kind})"
        self.report.stop_reason = f"llm unusable ({error.kind}): {error.remedy}"
        problem = error.problem()
        if note_unusable_llm(self.state.meta, problem, self.clock()):
            log.error("llm.unusable", run_id=self.run_id, job=JOB, **problem)

    def submit_batch(self, asking: list[Candidate]) -> None:
        assert self.batch_client is not None  # noqa: S101 - checked by the caller
        requests = [
            (custom_id_for(c.input.entity.ref, c.input.digest), self.summary_request(c.input))
            for c in asking
        ]
        if not self.ledger.within_budget([r for _, r in requests], batch=True):
            self.report.template_reason = "daily budget spent"
        else:
            try:
                batch_id = self.batch_client.submit_batch(requests)
            except TransientLLMError as error:
                log.warning("rewrite.llm_unavailable", error=str(error))
                self.report.template_reason = "llm unreachable"
            except PermanentLLMError as error:
                self.refused(error)
            else:
                # Recorded at once: a restart from here on polls this batch, never pays again.
                self.state.rewrites.start_batch(
                    batch_id,
                    submitted_at=self.clock(),
                    requests={
                        cid: c.input.entity.ref
                        for (cid, _), c in zip(requests, asking, strict=True)
                    },
                )
                self.report.batch_submitted = batch_id
                self.stage.prompts.update(summary.prompt_refs())
                log.info("rewrite.batch_submitted", batch_id=batch_id, requests=len(requests))
                return
        for candidate in asking:
            self.stage.template(candidate, self.report.template_reason or "llm unavailable")

    def charge(self, usage: Usage, model: str | None, *, batch: bool) -> None:
        self.ledger.charge(usage, model, batch=batch)
        self.report.usage, self.report.cost_usd = self.ledger.usage, self.ledger.cost_usd
