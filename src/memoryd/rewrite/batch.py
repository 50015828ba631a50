"""The summaries as one Message Batch: custom ids, and matching results back to entities.

A batch may take up to 24 hours, so submitting and collecting are separate runs: a rewrite
submits, records the batch id with its custom_id -> ref mapping in the state database, and
returns; a later run (the next rewrite, or the daemon's periodic poll) finds the batch pending,
asks its status once, and applies the results only when it has ended. Nothing ever waits on a
batch, and a restart resumes the recorded batch instead of submitting (and paying for) another.

A custom id is `s-` and 40 hex digits of a hash of the entity's ref and of the digest of the
summary input it was sent (43 characters of `[A-Za-z0-9_-]`, within the API's 64). So when
results come back, the id says both which entity an answer is for and whether that entity's
facts are still the ones summarized: an answer for an input that has changed since is *stale*
and is not applied (the entity is selected again on a later run).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from memoryd.llm.base import BatchItemFailure, ToolResult

CUSTOM_ID_PREFIX = "s-"


def custom_id_for(ref: str, input_digest: str) -> str:
    """The batch custom id of a summary request for `ref` written from `input_digest`."""
    digest = hashlib.sha256(f"{ref}\n{input_digest}".encode()).hexdigest()[:40]
    return CUSTOM_ID_PREFIX + digest


@dataclass(frozen=True)
class BatchAnswer:
    """One entity's outcome in an ended batch."""

    ref: str
    custom_id: str
    result: ToolResult | None  # None: the request errored, expired or is missing
    problem: str | None = None


@dataclass
class MatchedResults:
    answers: list[BatchAnswer] = field(default_factory=list)


def match_results(
    requests: Mapping[str, str], results: Mapping[str, ToolResult | BatchItemFailure]
) -> MatchedResults:
    """Pair each recorded request (custom_id -> ref) with its result, in custom_id order.

    Results may come in any order; only the custom id links an answer to its entity.
    """
    matched = MatchedResults()
    for custom_id in sorted(requests):
        outcome = results.get(custom_id)
        ref = requests[custom_id]
        if isinstance(outcome, ToolResult):
            matched.answers.append(BatchAnswer(ref, custom_id, outcome))
        elif isinstance(outcome, BatchItemFailure):
            problem = f"{outcome.kind}: {outcome.message}"
            matched.answers.append(BatchAnswer(ref, custom_id, None, problem))
        else:
            matched.answers.append(BatchAnswer(ref, custom_id, None, "no result in the batch"))
    return matched
