"""A heartbeat's chunks, processed in chronological order (`memoryd.heartbeat.engine`).

One store session for the whole heartbeat: each answer is applied to one in-memory transaction,
so later chunks see earlier ones; then accesses by agents, the facts, refreshed summaries and the
lines of `life/index.md` the heartbeat changed are staged, and the whole is committed
(`memoryd.heartbeat.committing`). A chunk filed by an earlier heartbeat, quarantined, behind a
failed chunk of its file, or without dialogue is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.counters import ApplyCounters
from memoryd.extractors.intake import Intake, Source
from memoryd.gitrepo import GitStore
from memoryd.heartbeat import answers, committing, rereading, sending, sharing, verdicts
from memoryd.heartbeat.run import RunBook
from memoryd.logs import get_logger
from memoryd.worktree import UnitOfWork

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.pending import PendingOverlay
    from memoryd.extractors.rereads import Rereading
    from memoryd.store.catalog import EntityCatalog
    from memoryd.worktree import FileTransaction

# What only a heartbeat with something to file needs (applying answers, the entity catalogue,
# the tool contract's models, the index) is imported where it is used: an idle heartbeat, a
# subprocess every few minutes, must not pay for it. Hence the PLC0415 imports below.

log = get_logger("memoryd.extractors.processing")  # the name its events always had

SecretScanner = Callable[[str], list[str]]
# Given the transaction, the catalogue, the items.json paths a heartbeat changed and the
# processing date, stage those entities' refreshed summaries and return their refs (the jobs
# layer passes `memoryd.store.refresh.refresh_summaries` with the configured decay rule).
SummaryRefresher = Callable[["FileTransaction", "EntityCatalog", Sequence[str], date], list[str]]
# Reads by agents not filed yet (`memoryd.reading.accesses`): (fact id, agent, day) each.
ReadAccess = tuple[str, str, date]


@dataclass(frozen=True)
class StoreWork:
    """The store-side parts a heartbeat with work files through, besides its bookkeeping."""

    git: GitStore
    sources: Sequence[Source]
    scan_secrets: SecretScanner
    prompt_refs: Sequence[str]
    reads: Sequence[ReadAccess]
    refresh_summaries: SummaryRefresher | None
    foreign_paths: Sequence[str]  # others' edits this heartbeat committed (or withheld)
    withheld: frozenset[str]  # others' edits left uncommitted by the secret scan
    rereading: Rereading | None = None  # reprocess requests read again (`memoryd reprocess`)


def process(
    run: RunBook, work: StoreWork, chunks: list[Chunk], read: Intake, *, replay: bool
) -> list[str]:
    """File the heartbeat's chunks in the order that makes it safe to kill at any moment;
    return the store paths committed.

    For each chunk, in chronological order (`answers.answer`, unless the journal has its
    answer already):

    1. its plan is journalled (`sending.send`);
    2. the model is called;
    3. the validated answer and its usage (the ledger's charge) are journalled in one database
       transaction, so that an answer is never paid for twice;
    4. the answer is applied to the heartbeat's one in-memory transaction.

    Then, once for the whole heartbeat:

    5. the commit intent (planned writes, new cursors, pending-fact changes) is recorded, and
       the applied chunks marked, in one database transaction;
    6. the files are written and committed in one git commit;
    7. cursors advance, chunks are marked committed, pending facts change and the intent is
       dropped, in one database transaction.

    A crash before 3 costs a call again; after 3 the answer is reused; before 6 nothing is in
    the store; between 5 and 7 recovery finishes or undoes the commit from its intent.
    """
    from memoryd.extractors.apply import StoreSession  # noqa: PLC0415 - see the imports
    from memoryd.extractors.pending import PendingOverlay  # noqa: PLC0415
    from memoryd.store.catalog import save_snapshot  # noqa: PLC0415

    uow = UnitOfWork(work.git)
    cache = run.settings.catalog_cache
    # Others' edits were just committed: unless some were withheld, the entity folders are
    # HEAD's, and the catalogue may come from its snapshot of HEAD.
    clean = cache is not None and not any(p.startswith("life/") for p in work.withheld)
    session = StoreSession.open(
        uow,
        skills_dir=run.settings.skills_dir,
        tacit_file=run.settings.tacit_file,
        today=run.clock().astimezone(run.settings.zone).date(),
        host_code=run.settings.host_code,
        catalog_cache=cache,
        catalog_head=work.git.head() if clean else None,
        catalog_changes=work.git.changed_since,
    )
    pending = PendingOverlay(run.state.pending)
    counters = ApplyCounters()
    if not replay:
        sharing.plan(run, chunks)
    try:
        _apply_all(run, chunks, session=session, pending=pending, counters=counters, replay=replay)
    finally:
        run.ahead.close()
        sending.settle(run)
        session.held.log_held()  # once per held item, whatever happens next
    verdicts.settle_invalid_answers(run)
    _stage_bookkeeping(run, work, uow, session, counters)
    run.report.counters = counters
    requests = rereading.stage_progress(run, uow, work.rereading)
    intent = committing.record_intent(run, uow, read, work.sources, pending)
    committing.commit_files(
        run,
        uow,
        intent,
        trailers=committing.trailers(work.sources, work.prompt_refs) | rereading.trailer(requests),
        scan_secrets=work.scan_secrets,
    )
    committing.finalize(run, intent)
    rereading.log_progress(requests, run.report.commit)
    if cache is not None and run.report.commit and not uow.withheld:
        save_snapshot(session.catalog, cache, run.report.commit, keep=run.settings.keep_catalog)
    return list(intent.writes)


def _stage_bookkeeping(
    run: RunBook, work: StoreWork, uow: UnitOfWork, session: StoreSession, counters: ApplyCounters
) -> None:
    """Stage what the applied answers imply besides themselves: accesses by agents, the facts,
    refreshed summaries and the lines of `life/index.md` that changed."""
    from memoryd.store.catalog import followed_paths  # noqa: PLC0415 - see the imports
    from memoryd.store.index import INDEX_PATH, update_index  # noqa: PLC0415
    from memoryd.store.reads import apply_reads  # noqa: PLC0415

    if work.reads:
        # Reads by agents (search, context, mcp) count as accesses, once per fact, agent
        # and day, recorded in this host's record so that they are never counted twice.
        counters.accesses += apply_reads(
            uow,
            session.facts,
            run.settings.host,
            work.reads,
            today=session.today,
            agents=run.settings.agents,
        )
    saved = session.facts.save_all()
    refreshed: list[str] = []
    if work.refresh_summaries is not None and saved:
        refreshed = work.refresh_summaries(uow, session.catalog, saved, session.today)
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
    others = [*work.foreign_paths, *(p for p in followed or () if p != INDEX_PATH)]
    edited = any(path.startswith("life/") for path in others)
    complete = followed is not None and INDEX_PATH not in followed
    moved += counters.entities_reactivated + edited + (not complete)
    if moved or not uow.exists(INDEX_PATH):
        changed = {*session.catalog.changed_refs(), *refreshed}
        update_index(uow, session.catalog, changed, others, complete=complete)


def _apply_all(
    run: RunBook,
    chunks: list[Chunk],
    *,
    session: StoreSession,
    pending: PendingOverlay,
    counters: ApplyCounters,
    replay: bool,
) -> None:
    from memoryd.extractors.apply import apply_answer  # noqa: PLC0415 - see the imports

    stopped = False
    for index, chunk in enumerate(chunks):
        if replay and chunk.key not in run.answers:
            continue  # a re-plan only re-applies what the first pass applied
        if not replay and not _should_process(run, chunk):
            continue
        answer = run.answers.get(chunk.key)
        if answer is None:
            if stopped or run.should_stop():
                stopped = stopped or run.stop("shutdown requested")
                run.hold(chunk)
                run.report.chunks_deferred += 1
                continue
            answer = answers.answer(run, chunk, session, chunks[index + 1 :])
            if answer is None:
                stopped = run.report.stopped_early
                continue
            run.answers[chunk.key] = answer
            run.done.append(chunk.key)
        counters.add(
            apply_answer(
                answer,
                chunk,
                session,
                pending=pending,
                mentions=run.state.mentions,
                min_mentions=run.settings.min_mentions,
            )
        )


def _should_process(run: RunBook, chunk: Chunk) -> bool:
    record = run.state.journal.get(chunk.key)
    if record is not None and record.state == "committed":
        return False  # filed by an earlier heartbeat whose cursor lagged behind
    if run.state.failures.is_quarantined(chunk.key):
        return False
    if any(path in run.held_files for path in chunk.files):
        run.hold(chunk)
        run.report.chunks_deferred += 1
        return False  # an earlier chunk of this file failed: the rest waits behind it
    if not chunk.has_dialogue:
        run.report.chunks_empty += 1
        return False
    return True
