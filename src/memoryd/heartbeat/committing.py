"""The end of a heartbeat with work (`memoryd.heartbeat.engine`): its commit intent, the
commit, the bookkeeping after it, and the journal's prune.

The transaction's planned writes, the new cursors and the pending-fact changes are recorded as
the commit *intent*; then the files are written and committed in one git commit (trailer
`Memoryd-Run`); then, in one database transaction, cursors advance, chunks are marked committed,
pending facts change and the intent is dropped (`memoryd.extractors.recovery` finishes or undoes
an intent a killed heartbeat left).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from memoryd.extractors.consumed import ahead_to_commit, cursors_to_commit, record_progress
from memoryd.extractors.intake import Intake
from memoryd.extractors.recovery import GENERATION_KEY, HEARTBEAT_INTENT_KEY, finalize_heartbeat
from memoryd.extractors.report import commit_message
from memoryd.logs import get_logger
from memoryd.worktree import RUN_TRAILER, UnitOfWork

if TYPE_CHECKING:
    from memoryd.extractors.pending import PendingOverlay
    from memoryd.heartbeat.engine import Heartbeat, _Progress


log = get_logger("memoryd.extractors.committing")  # the name its events always had

# Committed chunks are kept this long (see `prune`).
JOURNAL_RETENTION = timedelta(days=14)


def commit(
    hb: Heartbeat, uow: UnitOfWork, read: Intake, progress: _Progress, pending: PendingOverlay
) -> None:
    cursors = cursors_to_commit(hb.sources, read, progress.held_files)
    # A source counts as seen once something of it was consumed (a first heartbeat that
    # stopped before consuming anything leaves it to be read from the backfill window).
    seen = sorted(source["key"] for source in cursors if source["cursors"])
    ahead = ahead_to_commit(read, progress.done, progress.held_files)
    generation = record_progress(
        uow,
        host=hb.settings.host,
        mirrored=int(hb.state.meta.get(GENERATION_KEY) or 0),
        cursors=cursors,
        seen=seen,
        pending=pending.entries_after(),
        ahead=ahead,
    )
    plan = uow.plan()
    changes = pending.staged_changes()
    intent = {
        "run_id": hb.run_id,
        "writes": [[w.path, w.sha256] for w in plan],
        "sources": cursors,
        "chunks": progress.done,
        "pending": changes,
        "seen": seen,
        "ahead": ahead,
        "generation": generation,
    }
    with hb.state.transaction():
        for key in progress.done:
            hb.state.journal.mark_applied(key, run_id=hb.run_id, at=hb.clock())
        if plan:
            hb.state.meta.set_json(HEARTBEAT_INTENT_KEY, intent)
    if plan:
        hb.report.commit = uow.apply_and_commit(
            commit_message(hb.report.counters),
            {RUN_TRAILER: hb.run_id, **_trailers(hb)},
            scanner=hb.scan_secrets,
        )
        hb.committed_paths += [write.path for write in plan]
    finalize_heartbeat(hb.state, intent, hb.report.commit, hb.clock())
    hb.reads_filed = True
    if hb.report.outcome == "nothing-new" and (progress.done or hb.report.commit):
        hb.report.outcome = "ok"


def prune(hb: Heartbeat, *, settle: bool) -> None:
    # Committed chunks are only looked up again when their file is re-read from a held-back
    # cursor, within a few heartbeats; keeping them (plan and answer) for months would grow
    # the state database without bound. The space goes back to the file system.
    pruned = hb.state.journal.prune_committed(hb.clock() - JOURNAL_RETENTION)
    # Past conversation-days' texts packed tighter, a share per heartbeat that had work
    # (state/mentions.py): an idle heartbeat stays idle, however much is left to pack.
    settled = hb.state.mentions.settle(hb.clock().date() - timedelta(days=1)) if settle else 0
    if pruned or settled:
        hb.state.db.reclaim_space()
    if pruned:
        log.info("journal.pruned", chunks=pruned)


def _trailers(hb: Heartbeat) -> dict[str, str]:
    agents = sorted({source.agent for source in hb.sources})
    return {
        "Memoryd-Prompts": ", ".join(hb.extractor.prompt_refs),
        "Memoryd-Sources": ", ".join(
            f"{source.agent}:{source.key.split(':', 1)[0]}" for source in hb.sources
        )
        or "none",
        "Memoryd-Agents": ", ".join(agents) or "none",
    }
