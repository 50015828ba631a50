"""The single-writer lock: one memoryd writes to a store at a time.

An `flock(2)` on `<state dir>/memoryd.lock`, taken per job by the daemon and by the one-shot
commands. The kernel releases it when the holder dies, however it dies, so a crash never leaves a
stale lock behind. The holder writes its pid into the file so that a refused caller can say who
holds it. `status` never takes the lock.

Two state folders may name one store (two configurations, or a copy of one): each has its own
lock, so every writing session also takes the store's lock, `<git dir>/memoryd.lock` of the
repository the store lives in (`store_writer`), always after the state folder's lock, so two
writers never wait on each other in opposite orders. The daemon also holds
`<state dir>/memoryd-daemon.lock` for its whole life (`daemon_instance`): a second daemon on one
configuration is refused, naming the first's pid.

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
DAEMON_LOCK_NAME = "memoryd-daemon.lock"
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
    pending: list[Callable[[], None]] = []
    with held_lock(path, wait_seconds=wait_seconds, sleep=sleep, poll_seconds=poll_seconds):
        token = _AFTER_UNLOCK.set(pending)
        try:
            yield path
        finally:
            _AFTER_UNLOCK.reset(token)
    for callback in pending:
        callback()


@contextlib.contextmanager
def held_lock(
    path: Path,
    *,
    wait_seconds: float = 0.0,
    sleep: Callable[[float], None] | None = None,
    poll_seconds: float = 0.2,
) -> Iterator[Path]:
    """Hold an exclusive `flock` on `path` (created if missing) for the block, with this pid
    written in it; wait up to `wait_seconds`, then raise LockHeldError naming the holder."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        _acquire(fd, path, wait_seconds, sleep, poll_seconds)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def store_lock_path(store: Path) -> Path | None:
    """Where the store-level lock lives: `memoryd.lock` in the git directory of the repository
    the store is in (a `.git` folder, or the folder a `.git` file names, as a linked work tree
    has); None when the store is in no repository yet (`memoryd init` has not run)."""
    for folder in (store, *store.parents):
        dotgit = folder / ".git"
        if dotgit.is_dir() and not dotgit.is_symlink():
            return dotgit / LOCK_NAME
        if dotgit.is_file():
            try:
                text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            target = Path(text.removeprefix("gitdir:").strip())
            target = target if target.is_absolute() else folder / target
            return target / LOCK_NAME if target.is_dir() else None
    return None


@contextlib.contextmanager
def store_writer(
    store: Path,
    *,
    wait_seconds: float = 0.0,
    sleep: Callable[[float], None] | None = None,
    poll_seconds: float = 0.2,
) -> Iterator[Path | None]:
    """Hold the store-level lock (`store_lock_path`) for the block; take it after the state
    folder's lock. A store in no repository yet is not locked (the job will refuse it)."""
    path = store_lock_path(store)
    if path is None:
        yield None
        return
    with held_lock(path, wait_seconds=wait_seconds, sleep=sleep, poll_seconds=poll_seconds):
        yield path


@contextlib.contextmanager
def daemon_instance(state_dir: Path) -> Iterator[Path]:
    """Hold the daemon's lock on this state folder for its life; raise LockHeldError naming
    the running daemon's pid at once when another daemon holds it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with held_lock(state_dir / DAEMON_LOCK_NAME) as path:
        yield path


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
