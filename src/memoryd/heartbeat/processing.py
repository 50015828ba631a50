"""A heartbeat's chunks, processed in chronological order (`memoryd.heartbeat.engine`).

One store session for the whole heartbeat: each answer is applied to one in-memory transaction,
so later chunks see earlier ones; then accesses by agents, the facts, refreshed summaries and the
lines of `life/index.md` the heartbeat changed are staged, and the whole is committed
(`memoryd.heartbeat.committing`). A chunk filed by an earlier heartbeat, quarantined, behind a
failed chunk of its file, or without dialogue is skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.counters import ApplyCounters
from memoryd.extractors.intake import (
    Intake,
)
from memoryd.heartbeat import ahead as sending
from memoryd.heartbeat import answers, committing, sharing
from memoryd.logs import get_logger
from memoryd.worktree import UnitOfWork

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.pending import PendingOverlay
    from memoryd.heartbeat.engine import Heartbeat, _Progress


# What only a heartbeat with something to file needs is imported where it is used, as in
# `memoryd.heartbeat.engine`: an idle heartbeat must not pay for it (issue 15).

log = get_logger("memoryd.extractors.processing")  # the name its events always had


def process(
    hb: Heartbeat, chunks: list[Chunk], read: Intake, progress: _Progress, *, replay: bool
) -> None:
    from memoryd.extractors.apply import StoreSession  # noqa: PLC0415 - see the imports
    from memoryd.extractors.pending import PendingOverlay  # noqa: PLC0415
    from memoryd.store.catalog import followed_paths, save_snapshot  # noqa: PLC0415
    from memoryd.store.index import INDEX_PATH, update_index  # noqa: PLC0415
    from memoryd.store.reads import apply_reads  # noqa: PLC0415

    uow = UnitOfWork(hb.git)
    cache = hb.settings.catalog_cache
    # Others' edits were just committed: unless some were withheld, the entity folders are
    # HEAD's, and the catalogue may come from its snapshot of HEAD.
    clean = cache is not None and not any(p.startswith("life/") for p in hb._withheld)
    session = StoreSession.open(
        uow,
        skills_dir=hb.settings.skills_dir,
        tacit_file=hb.settings.tacit_file,
        today=hb.clock().astimezone(hb.settings.zone).date(),
        host_code=hb.settings.host_code,
        catalog_cache=cache,
        catalog_head=hb.git.head() if clean else None,
        catalog_changes=hb.git.changed_since,
    )
    pending = PendingOverlay(hb.state.pending)
    counters = ApplyCounters()
    if not replay:
        sharing.plan(hb, chunks)
    try:
        _apply_all(
            hb,
            chunks,
            session=session,
            pending=pending,
            counters=counters,
            progress=progress,
            replay=replay,
        )
    finally:
        hb.ahead.close()
        sending.settle(hb, session, hb._set_aside, chunks, progress)
        hb._set_aside = []
    answers.settle_invalid_answers(hb, progress)
    if hb.reads:
        # Reads by agents (search, context, mcp) count as accesses, once per fact, agent
        # and day, recorded in this host's record so that they are never counted twice.
        counters.accesses += apply_reads(
            uow, session.facts, hb.settings.host, hb.reads, today=session.today
        )
    saved = session.facts.save_all()
    refreshed: list[str] = []
    if hb.refresh_summaries is not None and saved:
        refreshed = hb.refresh_summaries(uow, session.catalog, saved, session.today)
    # The index lists entities (ref, name, bucket) with their summaries' gists; a heartbeat
    # changes it only by creating or moving entities or refreshing summaries, so the other
    # heartbeats skip reading every summary of the store; and this one reads only the
    # summaries of the entities it changed (or a person did), the other lines are kept.
    moved = counters.entities_created + counters.entities_archived + len(refreshed)
    # Others' changes: this heartbeat's commit of their edits, and the commits made since
    # memoryd's last one that the catalogue's snapshot followed (a person's, a pull). With
    # them known, the index is patched; without (no snapshot), it is checked line by line.
    # An index another commit changed (another host's memoryd, a merge, a person's commit)
    # is checked line by line, not overwritten whole as an uncommitted hand edit is.
    followed = followed_paths(session.catalog)
    others = [*hb._foreign_paths, *(p for p in followed or () if p != INDEX_PATH)]
    edited = any(path.startswith("life/") for path in others)
    complete = followed is not None and INDEX_PATH not in followed
    moved += counters.entities_reactivated + edited + (not complete)
    if moved or not uow.exists(INDEX_PATH):
        changed = {*session.catalog.changed_refs(), *refreshed}
        update_index(uow, session.catalog, changed, others, complete=complete)
    hb.report.counters = counters
    committing.commit(hb, uow, read, progress, pending)
    if cache is not None and hb.report.commit and not uow.withheld:
        save_snapshot(session.catalog, cache, hb.report.commit, keep=hb.settings.keep_catalog)


def _apply_all(
    hb: Heartbeat,
    chunks: list[Chunk],
    *,
    session: StoreSession,
    pending: PendingOverlay,
    counters: ApplyCounters,
    progress: _Progress,
    replay: bool,
) -> None:
    from memoryd.extractors.apply import apply_answer  # noqa: PLC0415 - see the imports

    stopped = False
    for index, chunk in enumerate(chunks):
        if replay and chunk.key not in progress.answers:
            continue  # a re-plan only re-applies what the first pass applied
        if not replay and not _should_process(hb, chunk, progress):
            continue
        answer = progress.answers.get(chunk.key)
        if answer is None:
            if stopped or hb.should_stop():
                stopped = stopped or hb._stop("shutdown requested")
                progress.held_files.update(chunk.files)
                hb.report.chunks_deferred += 1
                continue
            answer = answers.answer(hb, chunk, session, progress, chunks[index + 1 :])
            if answer is None:
                stopped = hb.report.stopped_early
                continue
            progress.answers[chunk.key] = answer
            progress.done.append(chunk.key)
        counters.add(
            apply_answer(
                answer,
                chunk,
                session,
                pending=pending,
                mentions=hb.state.mentions,
                min_mentions=hb.settings.min_mentions,
            )
        )


def _should_process(hb: Heartbeat, chunk: Chunk, progress: _Progress) -> bool:
    record = hb.state.journal.get(chunk.key)
    if record is not None and record.state == "committed":
        return False  # filed by an earlier heartbeat whose cursor lagged behind
    if hb.state.failures.is_quarantined(chunk.key):
        return False
    if any(path in progress.held_files for path in chunk.files):
        progress.held_files.update(chunk.files)
        hb.report.chunks_deferred += 1
        return False  # an earlier chunk of this file failed: the rest waits behind it
    if not chunk.has_dialogue:
        hb.report.chunks_empty += 1
        return False
    return True
