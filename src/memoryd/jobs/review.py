"""`memoryd review`: the tips the safety gate held (docs/cli.md, Reading the memory), over
real parts.

Listing reads the store's queue (`.memoryd/review/`) and takes no lock. A decision is a store
change made under the single-writer lock (the caller takes it) and committed on its own, with
the decision in the commit message and a `Memoryd-Review: accept|reject <id>` trailer, so git
history is the audit log: `accept` files the tip into the agent's files with its provenance and
marks the item accepted; `reject` marks it rejected, and the gate never files it. Both live in
the store, so they survive the loss of the state database. In a store shared by several hosts
a decision pulls first (so an item decided elsewhere is refused as already decided) and pushes
after its commit, as a heartbeat does, in one writing session (`memoryd.jobs.session`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from memoryd.extractors.gate import Tip, file_now
from memoryd.jobs.environment import Environment
from memoryd.jobs.parts import git_store, make_scanner
from memoryd.jobs.session import writing_session
from memoryd.logs import get_logger
from memoryd.redaction import redact
from memoryd.settings import Settings
from memoryd.store.review import ReviewItem, decide, list_items
from memoryd.worktree import UnitOfWork

log = get_logger(__name__)

REVIEW_TRAILER = "Memoryd-Review"
Decision = Literal["accept", "reject"]


def review_items(settings: Settings, env: Environment) -> list[ReviewItem]:
    """Every item of the review queue, held and decided (read only, no lock)."""
    return list_items(UnitOfWork(git_store(settings, env.clock)))


def decide_item(
    settings: Settings, env: Environment, item_id: str, decision: Decision
) -> tuple[ReviewItem, str | None, str | None]:
    """Accept or reject the held item `item_id`; return it as decided, the commit made and the
    sync problem to report (`memoryd.jobs.hooks.after_commit`), if any. Raise
    UnknownReviewItemError or AlreadyDecidedError (usage errors), StoreError."""
    with writing_session(settings, env) as session:
        uow = UnitOfWork(session.git)
        today = _local_day(env.clock(), settings)
        item = decide(uow, item_id, "accepted" if decision == "accept" else "rejected", today)
        # The text was redacted when it was held, but the queue is a store file anyone can
        # edit: it passes the redactor again before it is filed or written in a commit message.
        text = redact(item.text, tuple(settings.cleaning.extra_patterns))
        if decision == "accept":
            tip = Tip(item.kind, item.agent, text, topic=item.topic, routine=item.routine)
            file_now(
                uow,
                tip,
                item.sources,
                skills_dir=settings.store.skills_dir,
                tacit_file=settings.store.tacit_file,
            )
        what = f"{item.kind} of {item.agent}" + (f" ({item.topic})" if item.topic else "")
        message = (
            f"review: {decision} {item.id}, {what}\n\n"
            f"Held for: {', '.join(sorted(item.reasons))}\n"
            f"Text: {text}\n"
        )
        commit = uow.apply_and_commit(
            message, {REVIEW_TRAILER: f"{decision} {item.id}"}, scanner=make_scanner(settings)
        )
        log.info(
            "review.decided",
            review_id=item.id,
            decision=decision,
            kind=item.kind,
            agent=item.agent,
            reasons=sorted(item.reasons),
            commit=commit,
        )
        session.record_commit(commit)
    return item, commit, session.sync_problem


def _local_day(now: datetime, settings: Settings) -> str:
    return now.astimezone(settings.schedule.zone).date().isoformat()
