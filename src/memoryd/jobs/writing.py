"""Before and after a writing command (`forget`, `supersede`, `review accept|reject`).

Such a command changes the store as a heartbeat does, so in a store shared by several hosts
(`git.push`) it follows the heartbeat's order (`memoryd.jobs.heartbeat`): settle the repository,
check the store, finish whatever a killed job left half-done (`memoryd.jobs.reconcile`), pull
once that is done (so that a person's withheld uncommitted edit is carried over,
`memoryd.jobs.hooks.pull_after_recovery`), check the store again in case the remote brought a
newer format; then, after its commit, push (`memoryd.jobs.hooks.after_commit`). A new fact it
files gets an id in this host's range (`host_code`), like a heartbeat's, so that a correction
made on one host never gives an id another host gave. The caller holds the single-writer lock.
"""

from __future__ import annotations

from memoryd.gitrepo import GitStore
from memoryd.jobs import hooks
from memoryd.jobs.environment import Environment, host_name, open_state
from memoryd.jobs.parts import git_store, prepare_store
from memoryd.jobs.reconcile import reconcile_state
from memoryd.settings import Settings
from memoryd.store.items import host_id_code


def prepare_to_write(settings: Settings, env: Environment) -> GitStore:
    """Settle, check, recover and pull (see the module docstring); return the git store."""
    git = git_store(settings, env.clock)
    hooks.before_writing(settings, git, pull=False)
    prepare_store(git, dry_run=False)
    with open_state(settings, env, discard_corrupt=True) as state:
        reconcile_state(state, git, host_name(settings, env), env.clock())
    hooks.pull_after_recovery(settings, git)
    prepare_store(git, dry_run=True)
    return git


def host_code(settings: Settings, env: Environment) -> int | None:
    """This host's fact-id code in a store shared by several hosts, else None."""
    return host_id_code(host_name(settings, env)) if settings.git.push else None
