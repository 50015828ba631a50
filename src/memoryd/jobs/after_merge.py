"""Summaries after a merge by meaning: the facts of both hosts visible at once.

A heartbeat renders the template summary of each entity whose facts it changed
(`memoryd.store.refresh`). When two hosts file facts about one entity at the same time, both
render its `summary.md`, and the merge by meaning keeps the remote's (`memoryd.sync._merge`):
the facts this host filed would be missing from it until a later heartbeat touched the entity or
the weekly rewrite ran. So after a pull moved the branch, the summaries of the entities whose
`items.json` the move changed are refreshed by the heartbeat's own rule (only those out of
date: a hot or warm fact not cited, or a fact cited that is no longer active) and committed on
their own (message `memoryd: refresh summaries after a merge`, trailer `Memoryd-Sync:
summaries`), as `life/index.md` is regenerated after a merge. The caller holds the lock.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from memoryd import gitrepo
from memoryd.errors import StoreError
from memoryd.gitrepo import GitStore
from memoryd.jobs.parts import make_scanner
from memoryd.logs import get_logger
from memoryd.settings import Settings
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import ITEMS_FILE, LIFE
from memoryd.store.refresh import refresh_summaries
from memoryd.store.tiers import TierRule
from memoryd.sync import SYNC_TRAILER
from memoryd.worktree import UnitOfWork

log = get_logger(__name__)


def refresh_after_move(settings: Settings, git: GitStore, before: str | None) -> str | None:
    """Refresh the summaries a move of the branch from `before` left out of date (see the
    module docstring); return the commit made, if any. Never fails the job: a store problem
    (a corrupt file, a secret found) is logged (`summary.not_refreshed`) and left for the next
    heartbeat, which reports it."""
    try:
        return _refresh(settings, git, before)
    except StoreError as error:
        log.warning("summary.not_refreshed", reason=str(error), after="merge")
        return None


def _refresh(settings: Settings, git: GitStore, before: str | None) -> str | None:
    head, now = git.head(), git.now()
    if before is None or head is None or head == before or now is None:
        return None
    _work_tree, _git_dir, prefix = git.locations()
    old, new = gitrepo.read_tree(git, before), gitrepo.read_tree(git, head)
    changed = []
    for path, entry in new.items():
        relative = path[len(prefix) + 1 :] if prefix else path
        if prefix and not path.startswith(prefix + "/"):
            continue
        pure = PurePosixPath(relative)
        if pure.name == ITEMS_FILE and pure.parts[:1] == (LIFE,) and old.get(path) != entry:
            changed.append(relative)
    if not changed:
        return None
    uow = UnitOfWork(git)
    catalog = EntityCatalog.load(uow)
    today = now.astimezone(settings.schedule.zone).date()
    rule = TierRule.from_settings(settings.decay)
    refreshed = refresh_summaries(uow, catalog, changed, today=today, rule=rule)
    if not uow.plan():
        return None
    commit = uow.apply_and_commit(
        "memoryd: refresh summaries after a merge",
        {SYNC_TRAILER: "summaries"},
        scanner=make_scanner(settings),
    )
    log.info("summary.refreshed_after_merge", refs=refreshed, commit=commit)
    return commit
