"""Step 5 of a rewrite: ask the LLM to consolidate every file past its bound, and the tacit
file when its bullets changed since its last consolidation, one call each.

Each target (`memoryd.rewrite.consolidate.find_targets`) is one `consolidate_skills` call (the
tool forced, or automatic for a model that refuses a forced choice: `memoryd.llm.tool_choice`).
An answer with no tool call at all is asked once more, as an extraction would be; so is an
answer refused by the checks (a line lost, a file still past its bound: then it is asked to
merge harder), with the reason. A second refusal is final: nothing of it is written, and the
file is never cut short. A refused
answer is remembered by the digest of the content it was asked about (state meta
`rewrite.consolidation_refused:<path>`), so the same content is not paid for again; once the
file changes (a heartbeat adds a tip), it is tried again. A consolidated tacit file is
remembered the same way (`TACIT_DONE_KEY`), so it is not asked again until a heartbeat changes
its bullets; what its consolidation merged, dropped and held is counted
(`memoryd.rewrite.tacit_merge`). An unreachable LLM or a spent budget ends the step; the files
simply stay long until the next rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memoryd.llm.base import (
    LLMClient,
    PermanentLLMError,
    ToolRequest,
    ToolResult,
    TransientLLMError,
)
from memoryd.logs import get_logger
from memoryd.rewrite import consolidate
from memoryd.rewrite.ledger import Ledger
from memoryd.rewrite.tacit_merge import TacitChanges, settle_tacit
from memoryd.state.meta import Meta
from memoryd.store.review import hold
from memoryd.worktree import FileTransaction

log = get_logger(__name__)

REFUSED_KEY_PREFIX = "rewrite.consolidation_refused:"
TACIT_DONE_KEY = "rewrite.tacit_consolidated"
NO_TOOL_CALL = (
    "Your previous answer did not call the consolidate_skills tool. Answer only by calling it, "
    "with an input that follows its schema exactly."
)
REFUSED = (
    "Your previous answer was refused and nothing of it was written: {reason}. Answer again "
    "by calling consolidate_skills; account for every tip number."
)
MERGE_HARDER = (
    " The file must end up shorter: merge harder. Combine tips that share a subject into one "
    "line each and stay well within the limits."
)


@dataclass
class BoundedOutcome:
    agents: list[str] = field(default_factory=list)  # agents whose skills were consolidated
    files: list[str] = field(default_factory=list)  # routine and tacit files consolidated
    refused: int = 0
    calls: int = 0
    memos: dict[str, str] = field(default_factory=dict)  # to record once the run commits
    tacit: TacitChanges = field(default_factory=TacitChanges)


def consolidate_bounded(
    tx: FileTransaction,
    client: LLMClient,
    ledger: Ledger,
    meta: Meta,
    *,
    model: str,
    skills_dir: str,
    tacit_file: str,
    today: str,
) -> BoundedOutcome:
    """Consolidate, within `tx`, every skills index, routine file and tacit file past its
    bound, and the tacit file when its bullets changed; return what was done."""
    outcome = BoundedOutcome()
    tacit_done = meta.get(TACIT_DONE_KEY)
    for target in consolidate.find_targets(tx, skills_dir, tacit_file, tacit_done):
        memo_key = REFUSED_KEY_PREFIX + target.path
        if meta.get(memo_key) == target.content_digest:
            continue  # refused before for this very content: not paid for again
        correction = ""
        for attempt in (1, 2):
            request = consolidate.build_request(target, model=model, correction=correction)
            if not ledger.within_budget([request]):
                return outcome
            try:
                result = _ask(client, ledger, outcome, request)
                if result.tool_input is None and ledger.within_budget([request]):
                    again = replace(
                        request, user_content=f"{request.user_content}\n\n{NO_TOOL_CALL}"
                    )
                    result = _ask(client, ledger, outcome, again)
            except (TransientLLMError, PermanentLLMError) as error:
                log.warning("rewrite.consolidation_skipped", path=target.path, error=str(error))
                return outcome
            try:
                _apply(tx, target, result.tool_input, outcome, today=today)
            except consolidate.ConsolidationRefusedError as error:
                log.warning(
                    "rewrite.consolidation_refused",
                    path=target.path,
                    reason=error.reason,
                    attempt=attempt,
                )
                correction = REFUSED.format(reason=error.reason)
                correction += MERGE_HARDER if error.over_bound else ""
                continue
            break
        else:
            outcome.refused += 1
            outcome.memos[memo_key] = target.content_digest
            continue
        if target.kind == "tacit":
            written = tx.read_text(target.path) or ""
            outcome.memos[TACIT_DONE_KEY] = consolidate.content_digest(written)
        if target.kind == "skills":
            outcome.agents.append(target.folder.rsplit("/", 1)[-1])
        else:
            outcome.files.append(target.path)
    return outcome


def _apply(
    tx: FileTransaction,
    target: consolidate.Target,
    tool_input: dict[str, object] | None,
    outcome: BoundedOutcome,
    *,
    today: str,
) -> None:
    """Check and stage one answer. Raise ConsolidationRefusedError (nothing staged)."""
    answer = consolidate.parse_answer(tool_input)
    if target.kind != "tacit":
        consolidate.apply_consolidation(tx, target, answer)
        return
    consolidate.check_answer(target, answer, gate=False)  # every line accounted for
    settled, changes = settle_tacit(tx, target, answer, today=today)
    consolidate.apply_consolidation(tx, target, settled)
    for item in changes.to_hold:
        hold(tx, item)
        log.warning(
            "gate.held",
            review_id=item.id,
            agent=item.agent,
            kind=item.kind,
            reasons=list(item.reasons),
            trust="agent",
            session=None,
            proposals=1,
        )
    outcome.tacit.merged += changes.merged
    outcome.tacit.dropped += changes.dropped
    outcome.tacit.held += changes.held
    outcome.tacit.notes += changes.notes


def _ask(
    client: LLMClient, ledger: Ledger, outcome: BoundedOutcome, request: ToolRequest
) -> ToolResult:
    """One call, counted and charged (every answer is paid for, a text one included)."""
    result = client.call_tool(request)
    outcome.calls += 1
    ledger.charge(result.usage, result.model, batch=False)
    return result
