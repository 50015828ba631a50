"""What one weekly rewrite did: counters, its `rewrite.finished` fields and its commit message.

The commit message counts what changed, in this form:
`rewrite: 14 summaries, 2 archived, skills consolidated for 1 agent`, followed by the routine
and tacit consolidations when there were any (the tacit one counting the lines merged, dropped
and held), and `(template: <reason>)` when the deterministic template stood in for the LLM, so
that the history itself says which summaries are templates. Below it, one line per tacit line
merged (into which line), dropped (with its reason) or held for review: git keeps the old
lines, and the message says where each went.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from memoryd.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, EXIT_TEMPFAIL
from memoryd.llm.prices import Usage

Outcome = Literal[
    "ok", "nothing-to-do", "batch-pending", "stopped", "failed", "unusable", "dry-run"
]


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


@dataclass
class RewriteReport:
    """The result of `run_rewrite`. `exit_code` follows docs/cli.md (see `exit_code`)."""

    run_id: str
    outcome: Outcome = "nothing-to-do"
    entities: int = 0  # entities looked at
    parsed: int = 0  # entities whose facts were read (the rest took the fast path)
    selected: int = 0  # entities whose summary input changed
    summaries: int = 0  # summary.md files rewritten with content
    archived: int = 0  # summaries reduced to the "nothing recent" form: every fact went cold
    templated: int = 0  # of `summaries`, rendered by the template
    template_reason: str | None = None  # why the template stood in: markers, llm-unreachable...
    refused: int = 0  # model summaries refused by validation (the previous one stays)
    failed: int = 0  # summaries that got no usable answer (errored batch items, bad files)
    stale: int = 0  # batch answers for an input that has changed since (asked again later)
    reused: int = 0  # summary answers journalled by a killed predecessor, used without a call
    consolidated_agents: list[str] = field(default_factory=list)
    consolidated_files: list[str] = field(default_factory=list)  # routine and tacit files
    consolidations_refused: int = 0
    tacit_merged: int = 0  # tacit lines merged into (or reworded as) another line
    tacit_dropped: int = 0  # tacit lines dropped, each with its reason
    tacit_held: int = 0  # merged tacit lines held for review (their lines stay)
    tacit_notes: list[str] = field(default_factory=list)  # one per merge, drop or hold
    batch_submitted: str | None = None
    batch_applied: str | None = None
    batch_pending: str | None = None
    llm_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    commit: str | None = None
    stop_reason: str | None = None
    duration_ms: int = 0
    plan: dict[str, Any] | None = None  # the dry run's report

    @property
    def exit_code(self) -> int:
        """0 when the work is done, also when the template stood in for an unreachable LLM
        (the summaries were written and say so; the next run asks the LLM again); 75 when the
        run stopped early for a transient reason before writing (a batch status could not be
        fetched); 1 when the LLM refused a request for good; 78 when the account, key, model
        or endpoint cannot be used (the template stood in; only the operator can fix it)."""
        if self.outcome == "unusable":
            return EXIT_CONFIG
        if self.outcome == "stopped":
            return EXIT_TEMPFAIL
        return EXIT_FAILED if self.outcome == "failed" else EXIT_OK

    def message(self) -> str:
        parts = [_plural(self.summaries, "summary", "summaries")]
        parts.append(f"{self.archived} archived")
        if self.consolidated_agents:
            parts.append(
                "skills consolidated for " + _plural(len(self.consolidated_agents), "agent")
            )
        routines = [p for p in self.consolidated_files if "/routines/" in p]
        if routines:
            parts.append(_plural(len(routines), "routine file") + " consolidated")
        if len(routines) != len(self.consolidated_files):
            parts.append(
                f"tacit file consolidated ({self.tacit_merged} merged, "
                f"{self.tacit_dropped} dropped, {self.tacit_held} held)"
            )
        text = "rewrite: " + ", ".join(parts)
        if self.templated and self.template_reason:
            text += f" (template: {self.template_reason})"
        return text

    def commit_message(self) -> str:
        """`message` as the subject, then one line per tacit line merged, dropped or held."""
        if not self.tacit_notes:
            return self.message()
        notes = "".join(f"- {note}\n" for note in self.tacit_notes)
        return f"{self.message()}\n\nTacit lines:\n{notes}"

    def log_fields(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "outcome": self.outcome,
            "entities": self.entities,
            "entities_parsed": self.parsed,
            "selected": self.selected,
            "summaries": self.summaries,
            "archived": self.archived,
            "templated": self.templated,
            "template_reason": self.template_reason,
            "refused": self.refused,
            "failed": self.failed,
            "stale": self.stale,
            "reused": self.reused,
            "skills_consolidated": len(self.consolidated_agents),
            "files_consolidated": len(self.consolidated_files),
            "consolidations_refused": self.consolidations_refused,
            "tacit_merged": self.tacit_merged,
            "tacit_dropped": self.tacit_dropped,
            "tacit_held": self.tacit_held,
            "batch_submitted": self.batch_submitted,
            "batch_applied": self.batch_applied,
            "batch_pending": self.batch_pending,
            "llm_calls": self.llm_calls,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "commit": self.commit,
            "stop_reason": self.stop_reason,
            "duration_ms": self.duration_ms,
        }
