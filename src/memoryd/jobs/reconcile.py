"""Keeping the state database a cache of the store (docs/store-format.md, The store is the truth),
checked before every job.

The store holds what a correct heartbeat needs (`memoryd.store.hosts`: cursors, sources seen,
pending facts, with a generation raised by each commit that changes them); the state database
keeps a copy, bound to one store and one host, with the generation it mirrors. Before a job
writes, in this order:

1. **Identity.** A database bound to another store (or host) is not this store's cache: what it
   learnt of that store is forgotten (`State.forget_store`), so nothing of it (pending facts, a
   half-done commit) leaks into this one. An unbound database is bound; one from before the store
   kept a record, or one bound to this store under another host name, is adopted as it is (its
   next commit writes the record).
2. **Recovery.** A killed job's half-done commit is finished or undone (`memoryd.jobs.recovery`).
3. **Generation.** A database behind the store's record (a lost, restored or replaced state
   directory), or ahead of it (a store restored from an older backup), is rebuilt from the
   record: cursors, sources seen, pending facts. When the store is behind, chunks the journal
   says were committed in commits the store no longer has are taken back to `answered`, so they
   are filed again from their stored answers without paying for them again.

Every rebuild logs one `state.rebuilt` warning with its reason; a check that finds the database
in step with the store logs nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memoryd.extractors.intake import AHEAD_KEY
from memoryd.extractors.recovery import GENERATION_KEY
from memoryd.gitrepo import GitStore
from memoryd.jobs.recovery import finish_interrupted_jobs
from memoryd.logs import get_logger
from memoryd.state.facade import State
from memoryd.store.hosts import HostRecord, read_host_generation, read_host_record
from memoryd.store.layout import store_identity
from memoryd.worktree import UnitOfWork

log = get_logger(__name__)

BINDING_KEY = "store.binding"
SEEN_PREFIX = "source.seen:"


IdentityVerdict = Literal["in-step", "rebound", "renamed", "foreign", "adopted", "bound"]


@dataclass(frozen=True)
class Verdict:
    """What reconciling would do to a state database, decided without doing it. `identity`: the
    binding check (in step; `rebound`, bound before the store's first commit; `renamed`, this
    store under another host name; `foreign`, another store's; `adopted`, from before the store
    kept a record; `bound`, unbound until now). `rebuild`: the reason it would be rebuilt from
    the store's record, or None."""

    identity: IdentityVerdict
    rebuild: str | None
    cached: int
    stored: int


def reconcile_verdict(
    binding: object,
    generation: str | None,
    *,
    identity: str | None,
    host: str,
    stored: int,
    had_data: bool,
) -> Verdict:
    """Given the database's binding and generation, the store's identity, this host's name, the
    generation of its record in the store and whether the database has learnt anything, return
    what `reconcile_state` would do. `memoryd check` asks this, so the two never disagree."""
    verdict = identity_verdict(binding, identity, host, had_data=had_data, generation=generation)
    cached = int(generation or 0)
    return Verdict(verdict, rebuild_reason(verdict, cached, stored), cached, stored)


def identity_verdict(
    binding: object,
    identity: str | None,
    host: str,
    *,
    had_data: bool,
    generation: str | None,
) -> IdentityVerdict:
    """The binding check's decision (see `Verdict`)."""
    wanted = {"host": host, "store": identity}
    if binding == wanted:
        return "in-step"
    if (
        isinstance(binding, dict)
        and binding.get("store") is None
        and identity is not None
        and binding.get("host") == host
    ):
        return "rebound"
    if isinstance(binding, dict) and binding.get("store") == identity:
        return "renamed"
    if binding is not None:
        return "foreign"
    if had_data and generation is None:
        return "adopted"
    return "bound"


def rebuild_reason(verdict: IdentityVerdict, cached: int, stored: int) -> str | None:
    """Why the database would be rebuilt from the store's record after the binding check, or
    None when it is kept as it is."""
    if verdict in ("renamed", "adopted"):
        return None
    if verdict == "foreign":
        return "foreign"
    if cached == stored:
        return None
    if verdict == "bound":
        return "missing"  # a new, empty database over a store that has a record
    return "behind" if cached < stored else "ahead"


def has_learnt(state: State) -> bool:
    """Whether the database holds anything learnt of a store: cursors, pending facts, sources
    seen."""
    return bool(state.cursors.all() or state.pending.all() or state.meta.names(SEEN_PREFIX))


def reconcile_state(state: State, git: GitStore, host: str, at: datetime) -> str:
    """Bring the state database in step with the store before a job (see the module docstring);
    return what was done: "in-step", "bound", "adopted" or "rebuilt:<reason>"."""
    verdict = _check_identity(state, store_identity(git), host)
    finish_interrupted_jobs(state, git, at)
    if verdict in ("renamed", "adopted"):
        return "adopted"
    # The generation alone first (cheap on a canonical record); the whole record only to
    # rebuild from it.
    stored = read_host_generation(UnitOfWork(git), host) or 0
    cached = int(state.meta.get(GENERATION_KEY) or 0)
    reason = rebuild_reason(verdict, cached, stored)
    if reason is None:
        return "bound" if verdict == "bound" else "in-step"
    record = read_host_record(UnitOfWork(git), host)
    rebuild_from_record(state, git, record, host, reason=reason, cached=cached)
    return f"rebuilt:{reason}"


def _check_identity(state: State, identity: str | None, host: str) -> IdentityVerdict:
    """Act on the binding check: bind, rebind or forget as `identity_verdict` decides."""
    binding = state.meta.get_json(BINDING_KEY)
    generation = state.meta.get(GENERATION_KEY)
    had_data = binding is None and has_learnt(state)
    verdict = identity_verdict(binding, identity, host, had_data=had_data, generation=generation)
    wanted = {"host": host, "store": identity}
    if verdict == "renamed":
        # The same store under a new host name (`state.host` set or changed): the database is
        # still this machine's cache, and the next commit writes the record under the new name.
        was = binding.get("host") if isinstance(binding, dict) else None
        log.warning("state.host_renamed", store=identity, was=was, host=host)
    elif verdict == "foreign":
        log.warning(
            "state.foreign",
            bound_to=binding,
            store=identity,
            host=host,
            action="forgetting what it learnt of that store, then rebuilding from this one",
        )
        state.forget_store()
    elif verdict == "adopted":
        # A database from before the store kept a record: it is this store's own cache, and the
        # next heartbeat's commit writes the record from it.
        log.info("state.adopted", store=identity, host=host)
    if verdict != "in-step":
        # Every other verdict ends bound to this store and host (`rebound`: bound before the
        # store had a first commit, the same store now with a history).
        state.meta.set_json(BINDING_KEY, wanted)
    return verdict


def rebuild_from_record(
    state: State,
    git: GitStore,
    record: HostRecord | None,
    host: str,
    *,
    reason: str,
    cached: int,
) -> None:
    """Replace the database's cursors, sources seen and pending facts with the record's (none
    for a store without one), in one transaction, and log `state.rebuilt`."""
    reopened = 0
    if reason == "ahead":
        lost = [sha for sha in state.journal.committed_shas() if not git.is_ancestor(sha)]
        reopened = state.journal.reopen_committed(lost) if lost else 0
    sources = dict(record.sources) if record is not None else {}
    seen = record.seen if record is not None else frozenset()
    pending = record.pending if record is not None else ()
    with state.transaction():
        state.cursors.replace_all(sources)
        for key in state.meta.names(SEEN_PREFIX):
            state.meta.delete(key)
        for source_key in sorted(seen):
            state.meta.set(SEEN_PREFIX + source_key, "from the store")
        state.pending.clear()
        for entry in pending:
            state.pending.add(
                entity_name=entry.entity_name,
                kind=entry.kind,
                entity_key=entry.key,
                fact_json=json.dumps(dict(entry.fact), sort_keys=True),
                conversation_date=entry.conversation_date,
                source_json=json.dumps(dict(entry.source), sort_keys=True),
            )
        ahead = record.ahead if record is not None else {}
        state.meta.set_json(
            AHEAD_KEY, {path: [list(r) for r in ranges] for path, ranges in ahead.items()}
        )
        state.meta.set(GENERATION_KEY, str(record.generation if record is not None else 0))
    log.warning(
        "state.rebuilt",
        reason=reason,
        host=host,
        store_generation=record.generation if record is not None else 0,
        state_generation=cached,
        files=sum(len(files) for files in sources.values()),
        pending_facts=len(pending),
        chunks_reopened=reopened,
    )
