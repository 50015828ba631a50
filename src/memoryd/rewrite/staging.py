"""Summaries staged in the run's unit of work, and the tracking to record once they commit.

Each summary is written as `# <name>` plus its body (`memoryd.rewrite.summaries.summary_file`),
staged only when its bytes differ from what the file holds, so a rerun that produces the same
text changes nothing. A model's body passes the secret scrubber first: the model only saw
facts that were already cleaned, but it could still echo or assemble something that looks like
a secret. Whatever is staged, or found already in place, is recorded as rewritten from its
input (`tracking_digest`), so the selection pass leaves it alone until that input changes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memoryd.logs import get_logger
from memoryd.rewrite import summary
from memoryd.rewrite.report import RewriteReport
from memoryd.rewrite.select import Candidate, Mode, tracking_digest
from memoryd.state.rewrites import EntityRewrite
from memoryd.store import summaries
from memoryd.worktree import FileTransaction

log = get_logger(__name__)


class SummaryStage:
    def __init__(
        self,
        tx: FileTransaction,
        report: RewriteReport,
        *,
        clock: Callable[[], datetime],
        scrub: Callable[[str], str],
    ) -> None:
        self._tx = tx
        self._report = report
        self._clock = clock
        self._scrub = scrub
        self.records: list[EntityRewrite] = []
        self.prompts: set[str] = set()

    def model_summary(self, candidate: Candidate, body: str) -> None:
        """Stage a validated model summary."""
        self.prompts.update(summary.prompt_refs())
        self._stage(candidate, self._scrub(body), "llm", templated=False)

    def template(self, candidate: Candidate, reason: str) -> None:
        """Stage the deterministic template; `reason` says why it stands in for the LLM."""
        self._report.template_reason = self._report.template_reason or reason
        self.prompts.add(summaries.TEMPLATE_REF)
        self._stage(
            candidate, summaries.render_template(candidate.input), "template", templated=True
        )

    def without_facts(self, candidate: Candidate, mode: Mode) -> None:
        """Stage the summary of an entity with no hot or warm fact (no LLM involved): the
        template of its background cold facts; counted as archived when that is new
        (`archives` predicts it for the dry run)."""
        body = summary_without_facts(candidate)
        if self._put(candidate, body) and body:
            self._report.archived += 1
        self._record(candidate, mode)

    def refused(self, ref: str, error: summary.InvalidSummaryError) -> None:
        """A model summary failed validation: nothing staged, nothing recorded."""
        self._report.refused += 1
        # The refused answer can echo what the model saw: it is scrubbed before it is logged.
        log.warning(
            "rewrite.summary_refused",
            ref=ref,
            reason=self._scrub(error.reason),
            answer=self._scrub(error.raw[:500]),
        )

    def _stage(self, candidate: Candidate, body: str, mode: Mode, *, templated: bool) -> None:
        if self._put(candidate, body):
            self._report.summaries += 1
            self._report.templated += templated
        self._record(candidate, mode)

    def _put(self, candidate: Candidate, body: str) -> bool:
        entity = candidate.input.entity
        text = summaries.summary_file(entity.name, body)
        if self._tx.read_text(entity.summary_path) == text:
            return False
        self._tx.write_text(entity.summary_path, text)
        return True

    def _record(self, candidate: Candidate, mode: Mode) -> None:
        self.records.append(
            EntityRewrite(
                candidate.input.entity.ref,
                self._clock(),
                tracking_digest(mode, candidate.items_digest, candidate.input.digest),
                candidate.input.next_change,
            )
        )


def summary_without_facts(candidate: Candidate) -> str:
    """The summary of an entity with no hot or warm fact: the template of its cold facts
    (empty when it has none)."""
    return summaries.render_template(candidate.input) if candidate.input.facts else ""


def archives(tx: FileTransaction, candidate: Candidate) -> bool:
    """Whether the rewrite counts `candidate` (an entity with no fact in use) as archived: its
    summary becomes the template of its cold facts and that changes the file."""
    body = summary_without_facts(candidate)
    entity = candidate.input.entity
    return bool(body) and tx.read_text(entity.summary_path) != summaries.summary_file(
        entity.name, body
    )
