"""What runs around a writing job: pull before it, push and `index.commands` after a commit.

Before writing, whatever a killed memoryd left in the repository is settled and a repository
memoryd must not write to (a detached HEAD, a person's rebase or merge in progress) is refused:
`memoryd.sync._remote.recover`, GitStateError (exit 78). After a pull that merged, the summaries
the merge left out of date are refreshed and committed (`memoryd.jobs.after_merge`). Nothing
else here can fail the job. A
remote that refuses or cannot be reached is logged by `memoryd.sync._remote` and tried again by the
next job; a push that has failed `git.push_failure_limit` jobs in a row is logged as
`git.push_failing` (an error) at every job and returned as the job's sync problem (`status`, the
exit code and the daemon's STATUS line say so); an index command that fails or overruns
`index.timeout_seconds` is logged (`index.failed`) and killed, and the next command still runs.
Index commands run in the store folder with no shell and no stdin; they see memoryd's own
environment, so an operator's tool finds what it found when run by hand. They run after the
commit, once the single-writer lock is released (`memoryd.jobs.lock.after_unlock`); after
`BACKOFF_AFTER` runs in a row with a failed command they are skipped (`index.backoff`) for
`BACKOFF_FIRST`, doubling up to `BACKOFF_MAX`, so a broken index tool costs a heartbeat
nothing. The count and the time are kept in `<state dir>/index-backoff.json` (a cache: losing
it only retries sooner).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from memoryd import sync
from memoryd.gitrepo import GitStore
from memoryd.jobs.index_state import BACKOFF_FILE, read_json
from memoryd.jobs.lock import after_unlock
from memoryd.logs import get_logger
from memoryd.settings import Settings

log = get_logger(__name__)

# An index tool's output is for the log line, which must stay one readable line.
_OUTPUT_CHARS = 500
INIT_DONE_FILE = "index-init.json"
BACKOFF_AFTER = 3
BACKOFF_FIRST = timedelta(minutes=5)
BACKOFF_MAX = timedelta(hours=6)


def before_writing(settings: Settings, git: GitStore, *, pull: bool = True) -> None:
    """Settle and check the repository (see the module docstring); with `git.push` (and `pull`),
    bring in memory pushed from elsewhere before this job writes."""
    sync.recover(git)
    if pull and settings.git.push:
        sync.pull(git, settings.git.remote)


def pull_after_recovery(settings: Settings, git: GitStore) -> None:
    """With `git.push`, bring in memory pushed from elsewhere once memoryd's own half-done writes
    are finished or undone: uncommitted edits others left in files the remote changed are then
    carried over instead of postponing the pull (`memoryd.sync._remote.pull`)."""
    if settings.git.push:
        before = git.head()
        if sync.pull(git, settings.git.remote, carry_edits=True).outcome == "merged":
            from memoryd.jobs.after_merge import refresh_after_move  # noqa: PLC0415

            refresh_after_move(settings, git, before)


def after_commit(
    settings: Settings,
    git: GitStore,
    committed: bool,
    *,
    state_dir: Path | None = None,
    now: datetime | None = None,
) -> str | None:
    """Push (with `git.push`, also when an earlier push failed) and run the index commands
    when the job committed something (with the back-off when `state_dir` and `now` are given),
    once the writer's lock is released. Return the sync problem to report, if any."""
    problem = None
    if settings.git.push:
        # Imported here, as in `pull_after_recovery`: only a shared store (`git.push`) needs it,
        # and it brings the summaries' machinery that an idle heartbeat must not pay for.
        from memoryd.jobs.after_merge import refresh_after_move  # noqa: PLC0415

        before = git.head()
        result = sync.push_with_retries(git, settings.git.remote)
        if git.head() != before and refresh_after_move(settings, git, before) is not None:
            result = sync.push_with_retries(git, settings.git.remote)  # the refreshed summaries
        health = sync.record_push(git, result)
        limit = settings.git.push_failure_limit
        if health.push_failures >= limit:
            problem = (
                f"push to {settings.git.remote} failed {health.push_failures} jobs in a row: "
                f"{health.last_push_error or result.outcome}"
            )
            log.error(
                "git.push_failing",
                remote=settings.git.remote,
                failures=health.push_failures,
                limit=limit,
                last_push=health.last_push,
                error=health.last_push_error,
            )
    if committed and settings.index.commands:
        after_unlock(lambda: _index(settings, git.store_root, state_dir, now))
    return problem


def _index(settings: Settings, root: Path, state_dir: Path | None, now: datetime | None) -> None:
    """Run the index commands, with the back-off when `state_dir` and `now` are given."""
    commands = settings.index.commands
    if state_dir is None or now is None:
        run_index_commands(commands, root, settings.index.timeout_seconds)
        return
    backoff = _read_backoff(state_dir)
    until = backoff.get("until")
    if isinstance(until, str) and now < datetime.fromisoformat(until):
        log.warning("index.backoff", until=until, failures=backoff.get("failures"))
        return
    succeeded = run_index_commands(commands, root, settings.index.timeout_seconds)
    previous = backoff.get("failures")
    failures = (
        0 if succeeded == len(commands) else (previous if isinstance(previous, int) else 0) + 1
    )
    record: dict[str, object] = {"failures": failures}
    if failures >= BACKOFF_AFTER:
        pause = min(BACKOFF_FIRST * 2 ** (failures - BACKOFF_AFTER), BACKOFF_MAX)
        record["until"] = (now + pause).isoformat()
        log.warning("index.backoff", until=record["until"], failures=failures)
    _write_json(state_dir / BACKOFF_FILE, record)


def run_init_commands(settings: Settings, store_root: Path, state_dir: Path) -> int | None:
    """Run `index.init_commands` unless this very list already ran successfully for this
    state directory; return how many succeeded (None when skipped)."""
    commands = settings.index.init_commands
    if not commands:
        return None
    digest = hashlib.sha256(json.dumps(commands).encode("utf-8")).hexdigest()[:16]
    done = state_dir / INIT_DONE_FILE
    if read_json(done).get("digest") == digest:
        return None
    succeeded = run_index_commands(commands, store_root, settings.index.timeout_seconds)
    if succeeded == len(commands):
        _write_json(done, {"digest": digest})
    return succeeded


def _read_backoff(state_dir: Path) -> dict[str, object]:
    return read_json(state_dir / BACKOFF_FILE)


def _write_json(path: Path, data: dict[str, object]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as error:
        log.warning("index.state_not_saved", path=str(path), reason=str(error))


def run_index_commands(commands: Sequence[str], cwd: Path, timeout_seconds: float) -> int:
    """Run each command in turn; return how many succeeded. Never raises for a command."""
    succeeded = 0
    for command in commands:
        try:
            argv = shlex.split(command)
        except ValueError as error:
            log.error("index.failed", command=command, reason=f"cannot parse: {error}")
            continue
        if not argv:
            continue
        try:
            result = subprocess.run(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:
            log.error("index.failed", command=command, reason=f"timed out after {timeout_seconds}s")
            continue
        except OSError as error:
            log.error("index.failed", command=command, reason=str(error))
            continue
        if result.returncode != 0:
            log.error(
                "index.failed",
                command=command,
                reason=f"exit status {result.returncode}",
                stderr=_tail(result.stderr),
            )
            continue
        succeeded += 1
        log.info("index.finished", command=command)
    return succeeded


def _tail(output: bytes) -> str:
    return output.decode("utf-8", "replace").strip()[-_OUTPUT_CHARS:]
