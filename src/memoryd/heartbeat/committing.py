"""The end of a heartbeat with work (`memoryd.heartbeat.engine`): its commit intent, the
commit, the bookkeeping after it, and the journal's prune.

The transaction's planned writes, the new cursors and the pending-fact changes are recorded as
the commit *intent*; then the files are written and committed in one git commit (trailer
`Memoryd-Run`); then, in one database transaction, cursors advance, chunks are marked committed,
pending facts change and the intent is dropped (`memoryd.extractors.recovery` finishes or undoes
an intent a killed heartbeat left).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memoryd.extractors.consumed import ahead_to_commit, cursors_to_commit, record_progress
from memoryd.extractors.dropped_lines import record_dropped
from memoryd.extractors.intake import Intake, Source
from memoryd.extractors.recovery import GENERATION_KEY, HEARTBEAT_INTENT_KEY, finalize_heartbeat
from memoryd.extractors.report import commit_message
from memoryd.heartbeat.run import RunBook
from memoryd.logs import get_logger
from memoryd.worktree import RUN_TRAILER, UnitOfWork

if TYPE_CHECKING:
    from memoryd.extractors.pending import PendingOverlay


log = get_logger("memoryd.extractors.committing")  # the name its events always had

# Committed chunks are kept this long (see `prune`).
JOURNAL_RETENTION = timedelta(days=14)


@dataclass(frozen=True)
class Intent:
    """What a heartbeat is about to commit, recorded before the commit so that a killed
    heartbeat's commit is finished or undone (`memoryd.extractors.recovery`)."""

    record: dict[str, Any]  # as stored under HEARTBEAT_INTENT_KEY
    writes: list[str]  # the store paths the commit writes (none: nothing to commit)
    # over-long lines this read dropped (agent, source key, path, lines), for `memoryd status`
    dropped: tuple[tuple[str, str, str, int], ...] = ()


def record_intent(
    run: RunBook,
    uow: UnitOfWork,
    read: Intake,
    sources: Sequence[Source],
    pending: PendingOverlay,
) -> Intent:
    """Stage this host's record and record the commit intent; the applied chunks are marked
    in the same database transaction."""
    cursors = cursors_to_commit(sources, read, run.held_files)
    # A source counts as seen once something of it was consumed (a first heartbeat that
    # stopped before consuming anything leaves it to be read from the backfill window).
    seen = sorted(source["key"] for source in cursors if source["cursors"])
    ahead = ahead_to_commit(read, run.done, run.held_files)
    generation = record_progress(
        uow,
        host=run.settings.host,
        mirrored=int(run.state.meta.get(GENERATION_KEY) or 0),
        cursors=cursors,
        seen=seen,
        pending=pending.entries_after(),
        ahead=ahead,
    )
    plan = uow.plan()
    intent = {
        "run_id": run.run_id,
        "writes": [[w.path, w.sha256] for w in plan],
        "sources": cursors,
        "chunks": run.done,
        "pending": pending.staged_changes(),
        "seen": seen,
        "ahead": ahead,
        "generation": generation,
    }
    with run.state.transaction():
        for key in run.done:
            run.state.journal.mark_applied(key, run_id=run.run_id, at=run.clock())
        if plan:
            run.state.meta.set_json(HEARTBEAT_INTENT_KEY, intent)
    return Intent(intent, [write.path for write in plan], tuple(read.dropped))


def commit_files(
    run: RunBook,
    uow: UnitOfWork,
    intent: Intent,
    *,
    trailers: dict[str, str],
    scan_secrets: Callable[[str], list[str]],
) -> str | None:
    """Write the staged files and commit them in one git commit; None with nothing to write."""
    if not intent.writes:
        return None
    run.report.commit = uow.apply_and_commit(
        commit_message(run.report.counters, intent.writes),
        {RUN_TRAILER: run.run_id, **trailers},
        scanner=scan_secrets,
    )
    return run.report.commit


def finalize(run: RunBook, intent: Intent) -> None:
    """After the commit, in one database transaction: cursors advance, chunks are marked
    committed, pending facts change and the intent is dropped."""
    finalize_heartbeat(run.state, intent.record, run.report.commit, run.clock())
    # Once the cursors are past them, so that a killed heartbeat's lines are not listed twice.
    record_dropped(run.state.meta, intent.dropped, run.clock())
    if run.report.outcome == "nothing-new" and (run.done or run.report.commit):
        run.report.outcome = "ok"


def prune(run: RunBook, *, settle: bool) -> None:
    # Committed chunks are only looked up again when their file is re-read from a held-back
    # cursor, within a few heartbeats; keeping them (plan and answer) for months would grow
    # the state database without bound. The space goes back to the file system.
    pruned = run.state.journal.prune_committed(run.clock() - JOURNAL_RETENTION)
    # Past conversation-days' texts packed tighter, a share per heartbeat that had work
    # (state/mentions.py): an idle heartbeat stays idle, however much is left to pack.
    settled = run.state.mentions.settle(run.clock().date() - timedelta(days=1)) if settle else 0
    if pruned or settled:
        run.state.db.reclaim_space()
    if pruned:
        log.info("journal.pruned", chunks=pruned)


def trailers(sources: Sequence[Source], prompt_refs: Sequence[str]) -> dict[str, str]:
    """The commit's trailers besides the run id: the prompts, sources and agents it used."""
    agents = sorted({source.agent for source in sources})
    return {
        "Memoryd-Prompts": ", ".join(prompt_refs),
        "Memoryd-Sources": ", ".join(
            f"{source.agent}:{source.key.split(':', 1)[0]}" for source in sources
        )
        or "none",
        "Memoryd-Agents": ", ".join(agents) or "none",
    }
