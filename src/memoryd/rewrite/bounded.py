"""Step 5 of a rewrite: ask the LLM to consolidate every file past its bound, one call each.

Each target (`memoryd.rewrite.consolidate.find_targets`) is one `consolidate_skills` call (the
tool forced, or automatic for a model that refuses a forced choice: `memoryd.llm.tool_choice`).
An answer with no tool call at all is asked once more, as an extraction would be. A refused
answer is remembered by the digest of the content it was asked about (state meta
`rewrite.consolidation_refused:<path>`), so the same content is not paid for again; once the
file changes (a heartbeat adds a tip), it is tried again. An unreachable LLM or a spent budget
ends the step; the files simply stay long until the next rewrite.
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
from memoryd.state.meta import Meta
from memoryd.worktree import FileTransaction

log = get_logger(__name__)

REFUSED_KEY_PREFIX = "rewrite.consolidation_refused:"
NO_TOOL_CALL = (
    "Your previous answer did not call the consolidate_skills tool. Answer only by calling it, "
    "with an input that follows its schema exactly."
)


@dataclass
class BoundedOutcome:
    agents: list[str] = field(default_factory=list)  # agents whose skills were consolidated
    files: list[str] = field(default_factory=list)  # routine and tacit files consolidated
    refused: int = 0
    calls: int = 0
    memos: dict[str, str] = field(default_factory=dict)  # to record once the run commits


def consolidate_bounded(
    tx: FileTransaction,
    client: LLMClient,
    ledger: Ledger,
    meta: Meta,
    *,
    model: str,
    skills_dir: str,
    tacit_file: str,
) -> BoundedOutcome:
    """Consolidate, within `tx`, every skills index, routine file and tacit file past its
    bound; return what was done."""
    outcome = BoundedOutcome()
    for target in consolidate.find_targets(tx, skills_dir, tacit_file):
        memo_key = REFUSED_KEY_PREFIX + target.path
        if meta.get(memo_key) == target.content_digest:
            continue  # refused before for this very content: not paid for again
        request = consolidate.build_request(target, model=model)
        if not ledger.within_budget([request]):
            break
        try:
            result = _ask(client, ledger, outcome, request)
            if result.tool_input is None and ledger.within_budget([request]):
                again = replace(request, user_content=f"{request.user_content}\n\n{NO_TOOL_CALL}")
                result = _ask(client, ledger, outcome, again)
        except (TransientLLMError, PermanentLLMError) as error:
            log.warning("rewrite.consolidation_skipped", path=target.path, error=str(error))
            break
        try:
            answer = consolidate.parse_answer(result.tool_input)
            consolidate.apply_consolidation(tx, target, answer)
        except consolidate.ConsolidationRefusedError as error:
            outcome.refused += 1
            outcome.memos[memo_key] = target.content_digest
            log.warning("rewrite.consolidation_refused", path=target.path, reason=error.reason)
            continue
        if target.kind == "skills":
            outcome.agents.append(target.folder.rsplit("/", 1)[-1])
        else:
            outcome.files.append(target.path)
    return outcome


def _ask(
    client: LLMClient, ledger: Ledger, outcome: BoundedOutcome, request: ToolRequest
) -> ToolResult:
    """One call, counted and charged (every answer is paid for, a text one included)."""
    result = client.call_tool(request)
    outcome.calls += 1
    ledger.charge(result.usage, result.model, batch=False)
    return result
