"""A stale `index.lock` and how memoryd decides it is stale (used by `memoryd.gitrepo._repository`).

A crashed git leaves `.git/index.lock` behind and every later index write fails. The lock is
*held* when some process has it open (a scan of `/proc/*/fd`) or a `git` process other than a
read-only `cat-file` helper runs inside the repository (`/proc/*/cwd`). Processes of other users
are invisible to that scan; memoryd runs git under its own single-writer lock, so those are not
expected. Without `/proc` a lock always counts as held. An unheld lock older than the threshold
is removed (logged as `store.stale_lock_removed`); otherwise memoryd polls for a bounded time and
then raises GitBusyError (transient: the command exits 75). Time comes from the injected clock;
waiting counts polls, not seconds, so a fake clock and sleep make the policy testable at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import structlog

from memoryd.errors import GitBusyError

log = structlog.get_logger("memoryd.store._gitlock")  # the name its events always had


@dataclass(frozen=True)
class LockPolicy:
    """When a lock is stale, and how long to wait for a live one."""

    now: Callable[[], datetime]
    sleep: Callable[[float], None]
    stale_after: timedelta
    timeout_seconds: float
    poll_seconds: float
    proc_root: Path


def clear_index_lock(lock: Path, repository_dirs: tuple[Path, ...], policy: LockPolicy) -> None:
    """Return once `lock` is gone (removing it if stale); raise GitBusyError if it stays."""
    polls = max(1, int(policy.timeout_seconds / policy.poll_seconds))
    for attempt in range(polls + 1):
        try:
            modified = datetime.fromtimestamp(lock.lstat().st_mtime, UTC)
        except FileNotFoundError:
            return
        age = policy.now() - modified
        if age > policy.stale_after and not lock_is_held(lock, repository_dirs, policy.proc_root):
            lock.unlink(missing_ok=True)
            log.warning(
                "store.stale_lock_removed", lock=str(lock), age_seconds=int(age.total_seconds())
            )
            return
        if attempt < polls:
            policy.sleep(policy.poll_seconds)
    raise GitBusyError(
        f"{lock} is still present after {policy.timeout_seconds:g} s: another git process is "
        "working in this repository, or it crashed recently; remove the file if no git process "
        "is running"
    )


def lock_is_held(lock: Path, repository_dirs: tuple[Path, ...], proc_root: Path) -> bool:
    """Whether some live process may own `lock`; True when that cannot be determined."""
    if not proc_root.is_dir():
        return True
    target = str(lock)
    for process in proc_root.iterdir():
        if not process.name.isdigit():
            continue
        if _has_open(process, target) or _is_git_inside(process, repository_dirs):
            return True
    return False


def _has_open(process: Path, target: str) -> bool:
    try:
        descriptors = list((process / "fd").iterdir())
    except OSError:  # gone, or another user's process
        return False
    for descriptor in descriptors:
        try:
            if os.readlink(descriptor) == target:
                return True
        except OSError:
            continue
    return False


def _is_git_inside(process: Path, repository_dirs: tuple[Path, ...]) -> bool:
    try:
        if not (process / "comm").read_text().startswith("git"):
            return False
        arguments = (process / "cmdline").read_bytes().split(b"\0")
        cwd = Path(os.readlink(process / "cwd"))
    except OSError:
        return False
    # `cat-file --batch` helpers (which tools such as GitPython keep alive) only read objects;
    # they never lock.
    if b"cat-file" in arguments:
        return False
    return any(cwd == directory or directory in cwd.parents for directory in repository_dirs)
