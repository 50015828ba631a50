"""What an entry point read from the outside world, and the state database every job opens.

Each job opens the state database when it starts and closes it when done, so a long-running
daemon holds no database open between jobs. Light on purpose: `status` starts from here.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memoryd.logs import get_logger
from memoryd.settings import Settings, state_directory
from memoryd.state.errors import StateCorruptError
from memoryd.state.facade import DATABASE_FILE_NAME, State

log = get_logger(__name__)

Clock = Callable[[], datetime]

# A one-shot command (heartbeat, rewrite, retry, review, forget, supersede) waits this long for a
# running job to finish, then exits 75 naming the holder of the lock; each takes the wait as a
# parameter with this default, so a test can pass a short one.
LOCK_WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class Environment:
    """What the entry point read from the outside world, handed down explicitly. `machine` is
    the machine's host name (`state.host` overrides it: `host_name`); `long_lived`: the process
    runs job after job (the daemon), so what a job built may be kept for the next one."""

    environ: Mapping[str, str]
    clock: Clock
    machine: str = "localhost"
    long_lived: bool = False

    @classmethod
    def live(cls, environ: Mapping[str, str], *, long_lived: bool = False) -> Environment:
        """The real world, for the entry points: this environment, the wall clock (UTC) and the
        machine's host name."""
        return cls(
            environ=environ,
            clock=lambda: datetime.now(UTC),
            machine=socket.gethostname(),
            long_lived=long_lived,
        )


def host_name(settings: Settings, env: Environment) -> str:
    """This host's name for its record in the store: `state.host`, else the machine's name."""
    return settings.state.host or env.machine or "localhost"


@contextmanager
def open_state(
    settings: Settings, env: Environment, *, discard_corrupt: bool = False
) -> Iterator[State]:
    """Open the state database. With `discard_corrupt` (a job about to reconcile it with the
    store), a file that is not a usable state database is moved aside, logged
    (`state.discarded`), and a new one started: the store is the truth and rebuilds it."""
    directory = state_directory(settings, env.environ)
    # The umask's permissions (0750 under the unit's UMask=0027): memoryd's group passes through
    # to the read queue; the database itself is created 0600.
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / DATABASE_FILE_NAME
    try:
        state = State.open(path)
    except StateCorruptError as error:
        if not discard_corrupt:
            raise
        aside = _move_aside(path, env.clock())
        log.warning("state.discarded", path=str(path), moved_to=str(aside), reason=error.reason)
        state = State.open(path)
    try:
        yield state
    finally:
        state.close()


def _move_aside(path: Path, now: datetime) -> Path:
    """Rename the database (and its WAL files) to `<name>.corrupt-<UTC time>`; return the name."""
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            source.rename(aside.with_name(aside.name + suffix))
    return aside
