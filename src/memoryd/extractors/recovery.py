"""Finishing what a killed heartbeat left half-done (docs/heartbeat.md, step 1, 4 and 7).

Before writing files, a heartbeat records its *intent* in the state database: the writes it is
about to make (path and digest of the new content), the cursors it will commit, the chunks it
applied and its pending-fact changes. After the git commit (which carries the trailer
`Memoryd-Run: <run id>`) one database transaction advances everything and drops the intent.

If a heartbeat dies in between, the next one finds the intent and looks for the commit:
- found: the commit happened, only the bookkeeping is missing — finish it
  (`finalize_heartbeat`);
- not found: some files may hold memoryd's own half-done writes. A file whose content is exactly
  what memoryd planned is memoryd's, and is put back as HEAD has it; anything else (a file others
  changed, or one memoryd never reached) is left alone. The chunks stay journalled with their
  answers, so the next pass re-applies them without paying for them again.
Either way nothing is filed twice and no half-done write is ever committed as someone else's edit.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memoryd.extractors.intake import AHEAD_KEY
from memoryd.gitrepo import GitStore
from memoryd.logs import get_logger
from memoryd.state.facade import State
from memoryd.worktree import RUN_TRAILER, undo_own_writes

log = get_logger(__name__)

HEARTBEAT_INTENT_KEY = "heartbeat.intent"
# The generation of this host's record in the store (`memoryd.store.hosts`) that the state
# database mirrors; `memoryd.jobs.reconcile` compares the two before every job.
GENERATION_KEY = "store.generation"


def finalize_heartbeat(
    state: State, intent: dict[str, Any], commit: str | None, at: datetime
) -> None:
    """After the git commit: advance cursors, mark chunks committed, change pending facts and
    drop the intent, in one database transaction."""
    # Imported here: the pending-fact machinery (and the applying it builds on) is only needed
    # once a heartbeat or a killed one's intent has something to finish.
    from memoryd.extractors.pending import write_pending_changes  # noqa: PLC0415

    with state.transaction():
        for source in intent["sources"]:
            state.cursors.replace_source(source["agent"], source["key"], source["cursors"])
        for key in intent.get("seen", []):
            state.meta.set(f"source.seen:{key}", at.isoformat())
        if "ahead" in intent:
            state.meta.set_json(AHEAD_KEY, intent["ahead"])
        chunks = list(intent["chunks"])
        if chunks:
            state.journal.mark_committed(chunks, commit_sha=commit, at=at)
            for key in chunks:
                state.failures.clear(key)
        write_pending_changes(state.pending, intent["pending"])
        if commit is not None and intent.get("generation") is not None:
            state.meta.set(GENERATION_KEY, str(intent["generation"]))
        state.meta.delete(HEARTBEAT_INTENT_KEY)


def finish_interrupted_heartbeat(state: State, git: GitStore, at: datetime) -> str:
    """Finish or undo a killed heartbeat's commit; return what was done ("none", "finished",
    "undone")."""
    intent = state.meta.get_json(HEARTBEAT_INTENT_KEY)
    if not isinstance(intent, dict):
        return "none"
    commit = git.find_commit(RUN_TRAILER, str(intent["run_id"]))
    if commit is not None:
        finalize_heartbeat(state, intent, commit, at)
        log.warning(
            "heartbeat.recovered", run_id=intent["run_id"], action="finished", commit=commit
        )
        return "finished"
    restored = undo_own_writes(git, intent["writes"])
    state.meta.delete(HEARTBEAT_INTENT_KEY)
    log.warning(
        "heartbeat.recovered", run_id=intent["run_id"], action="undone", restored=len(restored)
    )
    return "undone"
