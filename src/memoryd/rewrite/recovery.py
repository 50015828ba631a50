"""Finishing what a killed rewrite left half-done, so its answers are never paid for twice.

A rewrite records its *intent* in the state database before it writes any file: the writes it
is about to make (path and digest of the new content) and the bookkeeping that follows the
commit (each entity's tracking, refused-consolidation memos, the batch to forget). After the git
commit (trailer `Memoryd-Run: <run id>`), one database transaction records the bookkeeping and
drops the intent (`finalize_rewrite`), and the journalled answers of the entities it recorded
(`memoryd.rewrite.answers`): their summaries are committed.

If a rewrite dies in between, the next one looks for its commit first:
- found: only the bookkeeping is missing; it is finished, so the summaries just committed are not
  selected (and paid for) again;
- not found: files whose content is exactly what the rewrite planned (a removed topic file:
  gone) are its own half-done writes and are put back as HEAD has them; anything else is left
  alone. The entities stay
  selected and are rewritten on this run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

from memoryd.gitrepo import GitStore
from memoryd.logs import get_logger
from memoryd.state.facade import State
from memoryd.state.rewrites import EntityRewrite
from memoryd.worktree import RUN_TRAILER, PlannedWrite, undo_own_writes

log = get_logger(__name__)

REWRITE_INTENT_KEY = "rewrite.intent"
CHARGED_KEY_PREFIX = "rewrite.batch_charged:"


def build_intent(
    run_id: str,
    *,
    writes: Iterable[PlannedWrite],
    records: Iterable[EntityRewrite],
    memos: Mapping[str, str],
    finished_batch: str | None,
    succeeded: bool,
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "writes": [[write.path, write.sha256] for write in writes],
        "records": [
            [
                r.ref,
                r.rewritten_at.isoformat(),
                r.digest,
                None if r.next_tier_change is None else r.next_tier_change.isoformat(),
            ]
            for r in records
        ],
        "memos": dict(sorted(memos.items())),
        "finished_batch": finished_batch,
        "succeeded": succeeded,
    }


def finalize_rewrite(state: State, intent: Mapping[str, Any], at: datetime) -> None:
    """Record the rewrite's bookkeeping and drop its intent, in one database transaction."""
    records = [
        EntityRewrite(
            ref,
            datetime.fromisoformat(rewritten_at),
            digest,
            None if change is None else date.fromisoformat(change),
        )
        for ref, rewritten_at, digest, change in intent["records"]
    ]
    with state.transaction():
        state.rewrites.record_many(records)
        state.rewrites.drop_answers(record.ref for record in records)
        for key, value in intent["memos"].items():
            state.meta.set(key, value)
        batch = intent["finished_batch"]
        if batch is not None:
            state.rewrites.finish_batch(batch)
            state.meta.delete(CHARGED_KEY_PREFIX + batch)
        if intent["succeeded"]:
            state.rewrites.set_last_success(at)
        state.meta.delete(REWRITE_INTENT_KEY)


def finish_interrupted_rewrite(state: State, git: GitStore, at: datetime) -> str:
    """Finish or undo a killed predecessor's rewrite; return "none", "finished" or "undone"."""
    intent = state.meta.get_json(REWRITE_INTENT_KEY)
    if not isinstance(intent, dict):
        return "none"
    commit = git.find_commit(RUN_TRAILER, str(intent["run_id"]))
    if commit is not None:
        finalize_rewrite(state, intent, at)
        log.warning("rewrite.recovered", run_id=intent["run_id"], action="finished", commit=commit)
        return "finished"
    restored = undo_own_writes(git, intent["writes"])
    state.meta.delete(REWRITE_INTENT_KEY)
    log.warning(
        "rewrite.recovered", run_id=intent["run_id"], action="undone", restored=len(restored)
    )
    return "undone"
