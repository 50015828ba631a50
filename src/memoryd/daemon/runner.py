"""The job wrapper: what every scheduled job runs inside, and what it is doing right now.

`JobRunner.run(name, body)` is the one place in memoryd that catches every exception: a job that
fails logs `job.failed` and the daemon carries on. Around the body it

- clears and binds the log context (`job`, `run_id`) in the worker thread itself, since context
  variables bound elsewhere do not reach APScheduler's threads and pooled threads keep stale ones;
- takes the single-writer lock without waiting: a job that finds it taken logs
  `<job>.skipped` with the holder's pid (the daemon never exits 75; systemd would restart it in a
  loop);
- logs a failure of memoryd's own (`MemorydError`: its message says what to do) without a
  traceback, and anything else with one;
- records in the `JobTracker` which job runs, since when, when it last made progress and whether
  it is waiting on the LLM, for the watchdog (a stuck job stops the pings) and for shutdown (an
  LLM call in flight may be abandoned; the journal makes that safe).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import structlog

from memoryd.errors import LockHeldError, MemorydError
from memoryd.jobs.lock import single_writer
from memoryd.logs import get_logger

log = get_logger(__name__)

Monotonic = Callable[[], float]


@dataclass(frozen=True)
class JobState:
    """A snapshot of the worker: `job` is None when it is idle."""

    job: str | None
    run_id: str | None
    started: float
    last_progress: float
    in_llm_call: bool


class JobTracker:
    """Thread-safe record of the running job; waiters are woken on every change."""

    def __init__(self, monotonic: Monotonic) -> None:
        self._monotonic = monotonic
        self._changed = threading.Condition()
        self._state = JobState(None, None, 0.0, 0.0, in_llm_call=False)
        self._calls = 0  # LLM calls in flight

    def snapshot(self) -> JobState:
        with self._changed:
            return self._state

    def begin(self, job: str, run_id: str) -> None:
        now = self._monotonic()
        self._set(JobState(job, run_id, now, now, in_llm_call=False))

    def end(self) -> None:
        self._set(JobState(None, None, 0.0, 0.0, in_llm_call=False))

    @contextmanager
    def llm_call(self) -> Iterator[None]:
        """Mark the worker as waiting on the LLM (abandonable) for the length of the block.
        Calls may overlap (`llm.concurrency`): the mark stays until the last one returns."""
        with self._changed:
            self._calls += 1
            self._update(in_llm_call=True)
        try:
            yield
        finally:
            with self._changed:
                self._calls -= 1
                self._update(in_llm_call=self._calls > 0)

    def stuck_for(self) -> float:
        """Seconds since the running job last made progress (0 when idle)."""
        state = self.snapshot()
        return 0.0 if state.job is None else self._monotonic() - state.last_progress

    def wait_until_stoppable(self, *, grace_seconds: float, deadline_seconds: float) -> bool:
        """Wait for the running job to end. After `grace_seconds`, a job waiting on the LLM is
        given up on; after `deadline_seconds`, any job is. Return True when the worker is idle,
        False when a job is being abandoned."""
        start = self._monotonic()
        with self._changed:
            while self._state.job is not None:
                waited = self._monotonic() - start
                if waited >= deadline_seconds or (
                    self._state.in_llm_call and waited >= grace_seconds
                ):
                    return False
                limit = grace_seconds if self._state.in_llm_call else deadline_seconds
                self._changed.wait(max(0.01, limit - waited))
            return True

    def _update(self, *, in_llm_call: bool) -> None:
        with self._changed:
            state = self._state
            self._set(
                JobState(state.job, state.run_id, state.started, self._monotonic(), in_llm_call)
            )

    def _set(self, state: JobState) -> None:
        with self._changed:
            self._state = state
            self._changed.notify_all()


class JobRunner:
    """Runs named jobs one at a time under the single-writer lock; see the module docstring."""

    def __init__(self, tracker: JobTracker, lock_dir: Callable[[], Path]) -> None:
        self.tracker = tracker
        self._lock_dir = lock_dir

    def run(self, name: str, body: Callable[[str], None]) -> bool:
        """Run `body(run_id)` as job `name`; return whether it ran to the end without error."""
        structlog.contextvars.clear_contextvars()
        run_id = uuid.uuid4().hex[:16]
        structlog.contextvars.bind_contextvars(job=name, run_id=run_id)
        self.tracker.begin(name, run_id)
        try:
            with single_writer(self._lock_dir()):
                body(run_id)
        except LockHeldError as error:
            log.info(
                f"{name}.skipped",
                reason="another memoryd holds the lock",
                holder_pid=error.holder_pid,
                lock=str(error.lock_path),
            )
            return False
        except MemorydError as error:
            # One of memoryd's own errors (a store not made yet or taken away, a repository it
            # must not write to) says what to do in its message: no traceback every heartbeat.
            log.error(
                "job.failed",
                error=str(error),
                error_type=type(error).__name__,
                exit_code=error.exit_code,
            )
            return False
        except Exception as error:  # the one broad except (STYLE 5): keeps the daemon alive
            log.error(
                "job.failed",
                error=str(error),
                error_type=type(error).__name__,
                exc_info=error,
            )
            return False
        finally:
            self.tracker.end()
            structlog.contextvars.clear_contextvars()
        return True
