"""The answer journal: summary answers paid for but not yet committed, kept for the next run.

A rewrite asks the LLM once per selected entity, but writes and commits only at its end. So that
a rewrite killed in between does not pay for those answers again, each validated summary answer
is journalled in the state database as soon as it is received, in the same transaction as its
usage charge (`memoryd.state.rewrites.RewriteTracking.journal_answer`).

An answer is keyed by the entity ref and the digest of what was asked (`asked_digest`): the
entity's summary input, the model and the summary prompts' versions. On the next run, a selected
entity whose journalled answer was asked exactly what it would be asked now reuses that answer
without a call; one whose input changed is asked anew. Answers are dropped once their summary
is committed (`memoryd.rewrite.recovery.finalize_rewrite`); those that no longer match any
question of the run (the input changed, the entity was rewritten otherwise) are pruned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.rewrite import summary
from memoryd.rewrite.select import Candidate
from memoryd.store.summaries import SummaryInput


def asked_digest(summary_input: SummaryInput, *, model: str) -> str:
    """The digest of what an entity's summary request asks: a different value, a new question."""
    asked = [summary_input.entity.ref, summary_input.digest, model, list(summary.prompt_refs())]
    canonical = json.dumps(asked, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Reuse:
    """The selected entities split by whether a journalled answer already answers them."""

    answered: list[tuple[Candidate, str]]  # (candidate, its journalled body)
    asking: list[Candidate]
    keep: dict[str, str]  # ref -> asked digest, for every candidate (what pruning keeps)


def split_answered(
    candidates: Iterable[Candidate], journal: dict[str, tuple[str, str]], *, model: str
) -> Reuse:
    """Given the candidates about to be asked and the journal (ref -> (asked digest, body)),
    return those a journalled answer already answers and those still to be asked, in order."""
    answered: list[tuple[Candidate, str]] = []
    asking: list[Candidate] = []
    keep: dict[str, str] = {}
    for candidate in candidates:
        ref = candidate.input.entity.ref
        digest = asked_digest(candidate.input, model=model)
        keep[ref] = digest
        found = journal.get(ref)
        if found is not None and found[0] == digest:
            answered.append((candidate, found[1]))
        else:
            asking.append(candidate)
    return Reuse(answered, asking, keep)
