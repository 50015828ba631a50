"""One writing session: what every job that changes the store runs around its work.

A heartbeat, a rewrite, a rewrite batch collected, `forget`, `supersede` and `review
accept|reject` all write the store the same way, so they share this one sequence instead of each
keeping a copy that drifts. The caller holds the single-writer lock of its state folder. In order:

0. take the store-level lock (`memoryd.jobs.lock.store_writer`), so that a memoryd with another
   state folder on the same store waits or is refused as a second writer is (the daemon does not
   wait: its job is skipped; a one-shot waits `LOCK_WAIT_SECONDS`, then exits 75);
1. settle the repository and refuse one memoryd must not write to (`memoryd.jobs.hooks`);
2. check the store (and migrate an older format);
3. open the state database, bring it in step with the store and finish whatever a killed job
   left half-done (`memoryd.jobs.reconcile`);
4. with `git.push`, pull, once those half-done writes are finished or undone, then check the
   store again in case the remote brought a newer format;
5. run the job's own work (the body of the `with`), which says what it committed;
6. close the state database, then push and run `index.commands` with their back-off
   (`memoryd.jobs.hooks.after_commit`);
7. after a commit, refresh the search index once the lock is released.

Collecting a pending rewrite batch skips steps 1 and 4 (`settle=False`): it is the daemon's cheap
periodic check and has always left settling and pulling to the next full job.

The search index's modules are imported only after a commit, so an idle heartbeat does not pay
for them (docs/architecture.md, Start-up and idle path).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from memoryd.gitrepo import GitStore
from memoryd.jobs import hooks
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment, host_name, open_state
from memoryd.jobs.lock import store_writer
from memoryd.jobs.parts import git_store, prepare_store
from memoryd.jobs.reconcile import reconcile_state
from memoryd.settings import Settings, state_directory
from memoryd.state.facade import State


@dataclass
class WritingSession:
    """The parts a writing job works with, and what it reports back to the session."""

    git: GitStore
    state: State
    committed: bool = False
    # The store paths the commit changed, when known: the search refresh then costs only those.
    committed_paths: Sequence[str] | None = None
    # Set when the session ends: the push problem to report, if any.
    sync_problem: str | None = None
    abandoned: bool = field(default=False, init=False)

    def record_commit(self, commit: object, paths: Sequence[str] | None = None) -> None:
        """Note the job's commit (None or "" when it made none) and the paths it changed."""
        self.committed = bool(commit)
        self.committed_paths = paths

    def abandon(self) -> None:
        """The job stops without writing (a usage error): no push, no index commands."""
        self.abandoned = True


@contextmanager
def writing_session(
    settings: Settings, env: Environment, *, sweep: bool = True, settle: bool = True
) -> Iterator[WritingSession]:
    """Run the body as one writing session (see the module docstring). Without `sweep`, the
    store is not walked for leftover temporary files (a heartbeat's foreign-edits step removes
    the ones git lists). If the body raises, nothing after it runs."""
    wait = 0.0 if env.long_lived else LOCK_WAIT_SECONDS
    with store_writer(settings.store.path, wait_seconds=wait):
        git = git_store(settings, env.clock)
        if settle:
            hooks.before_writing(settings, git, pull=False)
        prepare_store(git, dry_run=False, sweep=sweep)
        with open_state(settings, env, discard_corrupt=True) as state:
            reconcile_state(state, git, host_name(settings, env), env.clock())
            if settle:
                hooks.pull_after_recovery(settings, git)
                prepare_store(git, dry_run=True)
            session = WritingSession(git, state)
            yield session
        if session.abandoned:
            return
        session.sync_problem = hooks.after_commit(
            settings,
            git,
            committed=session.committed,
            state_dir=state_directory(settings, env.environ),
            now=env.clock(),
        )
    if session.committed:
        from memoryd.jobs.reading import refresh_search_after_commit  # noqa: PLC0415 - see the top

        refresh_search_after_commit(settings, env, paths=session.committed_paths)
