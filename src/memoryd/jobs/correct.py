"""`memoryd forget` and `memoryd supersede`: correcting a wrong or stale memory by command.

Nothing is deleted (docs/store-format.md, Facts). `forget FACT-ID` gives the fact the status
`retracted` and a
`retraction` record (the date, in `schedule.timezone`, and the reason); `supersede FACT-ID TEXT`
files TEXT as a new active fact of the same entity (same category, true from today, provenance
`memoryd supersede`) and marks the old one `superseded` with `supersededBy` pointing to it. Either
way the entity's summary (the deterministic template, as after a heartbeat) and `life/index.md`
are refreshed, and everything goes into one commit under the single-writer lock, logged as
`fact.retracted` or `fact.superseded`. A killed predecessor's work is finished first, and in a
store shared by several hosts the command pulls before writing, gives the new fact an id in this
host's range and pushes after its commit, as a heartbeat does (`memoryd.jobs.session`); a push
failing `git.push_failure_limit` jobs in a row makes it exit 1.

TEXT and the reason are the user's words typed at a prompt, so they pass the redactor (with
`cleaning.extra_patterns`) before anything is written, logged or committed: a secret in a
correction is filed as its `[REDACTED:<kind>]` marker, exactly like one in a transcript, and the
entity's files are never held out of later commits for it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import date
from typing import TextIO

from memoryd.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, StoreError
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment
from memoryd.jobs.lock import single_writer
from memoryd.jobs.parts import make_scanner
from memoryd.jobs.reading import today_for
from memoryd.jobs.session import writing_session
from memoryd.jobs.writing import host_code
from memoryd.logs import get_logger
from memoryd.redaction import redact
from memoryd.settings import LoadedConfig, state_directory
from memoryd.store.catalog import EntityCatalog
from memoryd.store.facts import FactBook, FactDraft, FactFile
from memoryd.store.index import write_index
from memoryd.store.items import Fact, FactSource
from memoryd.store.refresh import refresh_summaries
from memoryd.store.tiers import TierRule
from memoryd.worktree import RUN_TRAILER, UnitOfWork

log = get_logger(__name__)

SOURCE_AGENT = "memoryd"


def correct(
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    fact_id: str,
    reason: str,
    text: str | None,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    """Retract `fact_id` (`text` None) or supersede it by `text`; print what was done. A job
    holding the lock is waited for up to `lock_wait_seconds`."""
    settings = config.settings
    patterns = tuple(settings.cleaning.extra_patterns)
    reason = redact(reason, patterns)
    text = None if text is None else redact(text, patterns)
    env = Environment.live(environ)
    run_id = uuid.uuid4().hex[:16]
    today = today_for(settings, env)
    with single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds):
        with writing_session(settings, env) as session:
            git = session.git
            UnitOfWork(git).commit_foreign_edits(make_scanner(settings))
            uow = UnitOfWork(git)
            catalog = EntityCatalog.load(uow)
            facts = FactBook(uow, catalog, host_code=host_code(settings, env))
            found = facts.lookup_fact(fact_id)
            if found is None:
                session.abandon()
                out.write(f"memoryd: no fact {fact_id} in the store\n")
                log.error("fact.unknown", fact_id=fact_id)
                return EXIT_USAGE
            entity, old = found
            try:
                message, event, new_id = _apply(
                    facts.file_for(entity),
                    old,
                    text=text,
                    reason=reason,
                    today=today,
                    run_id=run_id,
                )
            except StoreError as error:
                session.abandon()
                out.write(f"memoryd: {error}\n")
                log.error("fact.not_corrected", fact_id=fact_id, reason=str(error))
                return EXIT_USAGE
            saved = facts.save_all()
            rule = TierRule.from_settings(settings.decay)
            refresh_summaries(uow, catalog, saved, today=today, rule=rule)
            write_index(uow, catalog)
            commit = uow.apply_and_commit(
                message, {RUN_TRAILER: run_id}, scanner=make_scanner(settings)
            )
            log.info(
                event,
                fact_id=fact_id,
                new_fact_id=new_id,
                ref=entity.ref,
                reason=reason,
                commit=commit,
            )
            session.record_commit(commit)
        problem = session.sync_problem
    done = "retracted" if new_id is None else f"superseded by {new_id}"
    out.write(f"{fact_id} {done} (commit {(commit or 'none')[:12]})\n")
    if problem is not None:
        out.write(f"memoryd: {problem}\n")
        return EXIT_FAILED
    return EXIT_OK


def _apply(
    fact_file: FactFile, old: Fact, *, text: str | None, reason: str, today: date, run_id: str
) -> tuple[str, str, str | None]:
    """Retract or supersede `old` in `fact_file`; return the commit message, the log event
    and the new fact's id. Raise StoreError when that cannot be done."""
    if text is None:
        fact_file.retract(old.id, on=today, reason=reason or "forgotten by command")
        return f"forget: retract {old.id}", "fact.retracted", None
    if old.status != "active":
        raise StoreError(f"{old.id} is {old.status}; only an active fact is superseded")
    outcome = fact_file.add(
        FactDraft(
            fact=text,
            category=old.category,
            timestamp=today,
            conversation_date=today,
            source=FactSource(SOURCE_AGENT, f"supersede:{run_id}", "", (0, 0)),
            related_entities=old.related_entities,
            supersedes=(old.id,),
        ),
        recorded_at=today,
    )
    new_id = outcome.fact.id
    if old.id not in outcome.supersession.superseded:
        raise StoreError(f"{old.id} could not be superseded by {new_id} (the same statement?)")
    return f"supersede: {old.id} by {new_id}", "fact.superseded", new_id
