"""The single-writer lock: one memoryd writes to a store at a time.

An `flock(2)` on `<state dir>/memoryd.lock`, taken per job by the daemon and by the one-shot
commands. The kernel releases it when the holder dies, however it dies, so a crash never leaves a
stale lock behind. The holder writes its pid into the file so that a refused caller can say who
holds it. `status` never takes the lock.

Work that follows a commit but needs no lock (the `index.commands`, the search index) is handed
to `after_unlock`: it runs once the lock is released, so a slow index tool never holds up the
next job, and runs at once when no lock is held.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

from memoryd.errors import LockHeldError

LOCK_NAME = "memoryd.lock"
# The callbacks to run when this context's lock is released; None when it holds no lock.
_AFTER_UNLOCK: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "memoryd_after_unlock", default=None
)


def after_unlock(callback: Callable[[], None]) -> None:
    """Run `callback` when the lock this context holds is released (at once if none is held).
    Callbacks run only after a block that ended normally, in the order they were given."""
    pending = _AFTER_UNLOCK.get()
    if pending is None:
        callback()
    else:
        pending.append(callback)


def read_holder(path: Path) -> int | None:
    """The pid written by the current (or last) holder, if any."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


@contextlib.contextmanager
def single_writer(
    state_dir: Path,
    *,
    wait_seconds: float = 0.0,
    sleep: Callable[[float], None] | None = None,
    poll_seconds: float = 0.2,
) -> Iterator[Path]:
    """Hold the store's single-writer lock for the duration of the block.

    Wait up to `wait_seconds` for a holder to finish, then raise LockHeldError naming its pid.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    pending: list[Callable[[], None]] = []
    try:
        _acquire(fd, path, wait_seconds, sleep, poll_seconds)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        token = _AFTER_UNLOCK.set(pending)
        try:
            yield path
        finally:
            _AFTER_UNLOCK.reset(token)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    for callback in pending:
        callback()


def _acquire(
    fd: int,
    path: Path,
    wait_seconds: float,
    sleep: Callable[[float], None] | None,
    poll_seconds: float,
) -> None:
    if sleep is None:
        import time  # noqa: PLC0415 - the default clock lives at the edge, injectable for tests

        sleep = time.sleep
    waited = 0.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waited >= wait_seconds:
                raise LockHeldError(path, read_holder(path)) from None
            sleep(poll_seconds)
            waited += poll_seconds
        else:
            return
