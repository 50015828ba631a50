"""A heartbeat's share of reprocess requests (`memoryd.extractors.rereads`): how far each got.

The re-read chunks go through the pipeline with the heartbeat's own (`processing`). Before the
commit intent is recorded, each request's file is staged with its progress — `done` when every
chunk of it is settled, else `reading` from its first chunk that is not — so that the progress
goes into the same commit as the memories it produced (trailer `Memoryd-Reprocess`), and a
killed heartbeat leaves the request as it was (its answers are in the journal).
"""

from __future__ import annotations

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.rereads import Rereading
from memoryd.heartbeat.run import RunBook
from memoryd.logs import get_logger
from memoryd.store.reprocess import REPROCESS_TRAILER, ReprocessRequest, write_request
from memoryd.worktree import FileTransaction

log = get_logger("memoryd.extractors.heartbeat")  # the heartbeat's events' logger


def settled(run: RunBook, chunk: Chunk) -> bool:
    """Whether nothing is left to do for the chunk: filed (in this heartbeat or before),
    quarantined, or without dialogue to send."""
    if chunk.key in run.done or not chunk.has_dialogue:
        return True
    record = run.state.journal.get(chunk.key)
    if record is not None and record.state == "committed":
        return True
    return run.state.failures.is_quarantined(chunk.key)


def stage_progress(
    run: RunBook, tx: FileTransaction, rereading: Rereading | None
) -> list[ReprocessRequest]:
    """Stage each request's progress after this heartbeat; return the requests as staged."""
    if rereading is None or not rereading.requests:
        return []
    after = rereading.progressed(lambda chunk: settled(run, chunk), run.run_id)
    for request in after:
        write_request(tx, request)
    return after


def trailer(requests: list[ReprocessRequest]) -> dict[str, str]:
    """The commit trailer naming the requests the commit moved on (none: no trailer)."""
    if not requests:
        return {}
    return {REPROCESS_TRAILER: ", ".join(request.id for request in requests)}


def log_progress(requests: list[ReprocessRequest], commit: str | None) -> None:
    for request in requests:
        if request.state == "done":
            log.info(
                "reprocess.finished", request=request.id, run_id=request.finished, commit=commit
            )
        else:
            resume = None if request.resume_from is None else request.resume_from.isoformat()
            log.info("reprocess.progressed", request=request.id, resume_from=resume, commit=commit)
