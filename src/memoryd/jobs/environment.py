"""What an entry point read from the outside world, and the state database every job opens.

Each job opens the state database when it starts and closes it when done, so a long-running
daemon holds no database open between jobs. Light on purpose: `status` starts from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from memoryd.settings import Settings, state_directory
from memoryd.state.facade import DATABASE_FILE_NAME, State

Clock = Callable[[], datetime]

# A one-shot command (heartbeat, rewrite, retry) waits this long for a running job to finish,
# then exits 75 naming the holder of the lock.
LOCK_WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class Environment:
    """What the entry point read from the outside world, handed down explicitly."""

    environ: Mapping[str, str]
    clock: Clock

    @classmethod
    def live(cls, environ: Mapping[str, str]) -> Environment:
        """The real world, for the entry points: this environment and the wall clock (UTC)."""
        return cls(environ=environ, clock=lambda: datetime.now(UTC))


@contextmanager
def open_state(settings: Settings, env: Environment) -> Iterator[State]:
    directory = state_directory(settings, env.environ)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    state = State.open(directory / DATABASE_FILE_NAME)
    try:
        yield state
    finally:
        state.close()
