"""`memoryd run`: the scheduler in the foreground, for systemd (docs/cli.md).

One `BlockingScheduler` with one worker thread for the jobs that write (so they never overlap)
and a second one for the watchdog ping (so a long heartbeat does not starve it):

- a heartbeat at start and every `schedule.heartbeat_minutes`;
- the weekly rewrite on `schedule.rewrite_cron` in `schedule.timezone`, and right after the
  start-up heartbeat when the last successful rewrite is over a week old (or never happened);
- explicit job defaults: coalesce missed runs into one, one instance per job, and a generous
  misfire grace time, because a suspended VPS or a long backfill delays runs and a late run is
  better than a skipped one. Listeners log missed runs (`job.missed`) and errors.

systemd: `READY=1` once the scheduler runs (before the start-up heartbeat), `STATUS=` with the
last heartbeat's summary (or, while the LLM cannot be used, the problem and what to fix; the
heartbeat logs `llm.unusable` again at most once an hour meanwhile), `WATCHDOG=1` from the
watchdog job while no job is stuck past its deadline (the pings then stop and systemd restarts
us), `STOPPING=1` on the way out.

Signals (through `memoryd.daemon.signals`, never in a handler): SIGTERM/SIGINT stop scheduling
and ask the running job to stop at its next safe point; a job waiting on the LLM is abandoned
after a short grace (its plan is journalled, so nothing is lost or paid twice) and the process
exits 0 well within `TimeoutStopSec`. SIGHUP reloads the configuration: validated first; an
invalid one is logged and the old one kept, and leads `STATUS=` and `memoryd status` until a
reload succeeds (`memoryd.daemon.record`). The daemon never exits 75.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    EVENT_SCHEDULER_STARTED,
    JobExecutionEvent,
    SchedulerEvent,
)
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers import SchedulerNotRunningError
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from memoryd.daemon.notify import Notifier
from memoryd.daemon.record import DaemonRecord, reschedule
from memoryd.daemon.runner import JobRunner, JobTracker
from memoryd.daemon.schedule import (
    CATCHUP_REWRITE_JOB,
    CONTINUE_HEARTBEAT_JOB,
    DEFAULT_MISFIRE_GRACE_SECONDS,
    HEARTBEAT_JOB,
    REWRITE_JOB,
    REWRITE_MISFIRE_GRACE_SECONDS,
    REWRITE_STALE_AFTER,
    STARTUP_HEARTBEAT_JOB,
    WATCHDOG_JOB,
    heartbeat_trigger,
    rewrite_trigger,
    status_line,
    stuck_deadline,
)
from memoryd.daemon.settings_diff import changed_keys
from memoryd.daemon.signals import SignalChannel
from memoryd.errors import ConfigError
from memoryd.extractors.report import HeartbeatReport
from memoryd.jobs.environment import Environment, open_state
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.logs import get_logger
from memoryd.settings import (
    LoadedConfig,
    Settings,
    check_environment,
    load_settings,
    state_directory,
)

log = get_logger(__name__)


@dataclass(frozen=True)
class StopPolicy:
    """How long shutdown waits: an LLM call in flight gets `grace_seconds` to return before it
    is abandoned; a job at work on files gets up to `deadline_seconds` (keep it below the unit's
    `TimeoutStopSec`)."""

    grace_seconds: float = 3.0
    deadline_seconds: float = 60.0


@dataclass(frozen=True)
class DaemonOptions:
    stop: StopPolicy = field(default_factory=StopPolicy)
    monotonic: Callable[[], float] = time.monotonic
    # Leaves the process while a worker thread is still blocked (on an abandoned LLM call);
    # a normal exit would wait for that thread. Replaceable in tests.
    hard_exit: Callable[[int], None] = os._exit


class Daemon:
    """The scheduler, its jobs and its control; `run()` blocks until stopped, returns 0."""

    def __init__(
        self,
        config: LoadedConfig,
        env: Environment,
        notifier: Notifier,
        options: DaemonOptions | None = None,
    ) -> None:
        self.config = config
        self.env = env
        self.notifier = notifier
        self.options = options or DaemonOptions()
        self.tracker = JobTracker(self.options.monotonic)
        self.runner = JobRunner(
            self.tracker, lambda: state_directory(self.settings, self.env.environ)
        )
        self._stopping = threading.Event()
        self._stalled_logged = False
        self.last_report: HeartbeatReport | None = None
        self.scheduler = BlockingScheduler(
            timezone=UTC,
            executors={"default": ThreadPoolExecutor(1), "watchdog": ThreadPoolExecutor(1)},
            job_defaults={
                "coalesce": True,  # runs missed while suspended or busy become one run
                "max_instances": 1,
                "misfire_grace_time": DEFAULT_MISFIRE_GRACE_SECONDS,
            },
        )
        self.scheduler.add_listener(self._on_started, EVENT_SCHEDULER_STARTED)
        self.scheduler.add_listener(
            self._on_job_event, EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES
        )
        self.record = DaemonRecord(self.scheduler, notifier, env, lambda: self.settings)

    @property
    def settings(self) -> Settings:
        return self.config.settings

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # -- lifecycle ----------------------------------------------------------------------------

    def run(self) -> int:
        """Schedule the jobs and run until SIGTERM/SIGINT; return the exit code (always 0)."""
        # Our listeners report missed runs and errors as our own events; APScheduler's own
        # per-run INFO lines would only be noise in the journal.
        scheduler_logger = logging.getLogger("apscheduler")
        level = scheduler_logger.level
        scheduler_logger.setLevel(logging.ERROR)
        try:
            return self._run()
        finally:
            scheduler_logger.setLevel(level)

    def _run(self) -> int:
        self._schedule()
        log.info(
            "daemon.started",
            pid=os.getpid(),
            config=str(self.config.path),
            heartbeat_minutes=self.settings.schedule.heartbeat_minutes,
            rewrite_cron=self.settings.schedule.rewrite_cron,
            timezone=self.settings.schedule.timezone,
            watchdog_seconds=self.notifier.watchdog_seconds,
        )
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        with SignalChannel(signals, self._on_signal):
            if not self.stopping:
                try:
                    self.scheduler.start()  # blocks until request_stop() shuts it down
                except JobLookupError:
                    # APScheduler marks itself stopped before taking its job-store lock: a stop
                    # during the hand-out of a one-shot job makes the loop's removal of it raise.
                    if not self.stopping:
                        raise
            return self._finish()

    def request_stop(self, reason: str = "requested") -> None:
        """Stop scheduling; the running job stops at its next safe point. Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        log.info("daemon.stopping", reason=reason, job=self.tracker.snapshot().job)
        self.notifier.stopping()
        self._shutdown_scheduler()

    def reload(self) -> bool:
        """Reload the configuration file; keep the old settings if the new ones are invalid."""
        path = self.config.path
        try:
            loaded = load_settings(path)
        except ConfigError as error:
            return self.record.reload_failed(path, error.problems)
        report = check_environment(loaded.settings, self.env.environ)
        if not report.ok:
            return self.record.reload_failed(path, report.problems)
        old, self.config = self.settings, loaded
        reschedule(self.scheduler, old.schedule, loaded.settings.schedule)
        log.info(
            "config.reloaded",
            path=str(path),
            warnings=report.warnings,
            changed=changed_keys(old, loaded.settings),
            next_heartbeat=self.record.reloaded(),
        )
        return True

    def _finish(self) -> int:
        stop = self.options.stop
        idle = self.tracker.wait_until_stoppable(
            grace_seconds=stop.grace_seconds, deadline_seconds=stop.deadline_seconds
        )
        if idle:
            log.info("daemon.stopped", abandoned_job=None)
            return 0
        state = self.tracker.snapshot()
        log.warning(
            "daemon.stopped",
            abandoned_job=state.job,
            abandoned_run_id=state.run_id,
            in_llm_call=state.in_llm_call,
            note="the next heartbeat finishes the work from the journal",
        )
        for handler in logging.getLogger().handlers:
            handler.flush()
        self.options.hard_exit(0)
        return 0

    def _shutdown_scheduler(self) -> None:
        # Not started yet: _on_started shuts it down as soon as it is.
        with contextlib.suppress(SchedulerNotRunningError):
            self.scheduler.shutdown(wait=False)

    def _on_signal(self, number: int) -> None:
        if number == signal.SIGHUP:
            self.reload()
        else:
            self.request_stop(reason=signal.Signals(number).name)

    def _on_started(self, _event: SchedulerEvent) -> None:
        if self.stopping:
            self._shutdown_scheduler()
            return
        self.notifier.ready("started; first heartbeat running")
        log.info("daemon.ready", notify=self.notifier.enabled, next_heartbeat=self.record.started())

    def _on_job_event(self, event: SchedulerEvent) -> None:
        assert isinstance(event, JobExecutionEvent)  # noqa: S101 - registered for job events only
        if event.code == EVENT_JOB_ERROR:
            log.error("job.failed", job=event.job_id, error=repr(event.exception))
            return
        if event.code == EVENT_JOB_MAX_INSTANCES:
            reason = "the previous run was still going"
        else:
            reason = "started later than its misfire grace time"
        scheduled = event.scheduled_run_time
        log.warning(
            "job.missed",
            job=event.job_id,
            scheduled=scheduled.isoformat() if isinstance(scheduled, datetime) else None,
            reason=reason,
        )

    # -- the schedule -------------------------------------------------------------------------

    def _schedule(self) -> None:
        schedule = self.settings.schedule
        self.scheduler.add_job(
            self.heartbeat_job,
            DateTrigger(timezone=UTC),  # now
            id=STARTUP_HEARTBEAT_JOB,
            misfire_grace_time=None,
        )
        self.scheduler.add_job(
            self.heartbeat_job,
            heartbeat_trigger(schedule),
            id=HEARTBEAT_JOB,
            misfire_grace_time=schedule.heartbeat_minutes * 60,
        )
        self.scheduler.add_job(
            self.rewrite_job,
            rewrite_trigger(schedule),
            id=REWRITE_JOB,
            misfire_grace_time=REWRITE_MISFIRE_GRACE_SECONDS,
        )
        if self.rewrite_overdue():
            # Queued behind the start-up heartbeat on the one worker, however long that takes.
            self.scheduler.add_job(
                self.rewrite_job,
                DateTrigger(timezone=UTC),
                id=CATCHUP_REWRITE_JOB,
                misfire_grace_time=None,
            )
        if self.notifier.watchdog_seconds:
            self.scheduler.add_job(
                self.watchdog_job,
                IntervalTrigger(seconds=max(1.0, self.notifier.watchdog_seconds / 2)),
                id=WATCHDOG_JOB,
                executor="watchdog",
                misfire_grace_time=None,
            )

    def rewrite_overdue(self) -> bool:
        with open_state(self.settings, self.env) as state:
            last = state.rewrites.last_success()
        return last is None or self.env.clock() - last > REWRITE_STALE_AFTER

    # -- the jobs -----------------------------------------------------------------------------

    def heartbeat_job(self) -> None:
        if not self.stopping:
            self.runner.run("heartbeat", self._heartbeat)

    def rewrite_job(self) -> None:
        if not self.stopping:
            self.runner.run("rewrite", self._rewrite)

    def watchdog_job(self) -> None:
        """Ping systemd's watchdog unless a job is stuck past its deadline."""
        deadline = self.stuck_deadline(self.tracker.snapshot().job)
        stuck = self.tracker.stuck_for()
        if stuck > deadline:
            if not self._stalled_logged:
                self._stalled_logged = True
                log.error(
                    "watchdog.stalled",
                    job=self.tracker.snapshot().job,
                    stuck_seconds=round(stuck),
                    deadline_seconds=round(deadline),
                )
            return
        self._stalled_logged = False
        self.notifier.watchdog()

    def stuck_deadline(self, job: str | None) -> float:
        """Seconds without a sign of progress after which `job` counts as stuck."""
        return stuck_deadline(job, self.settings.llm)

    def _heartbeat(self, run_id: str) -> None:
        report = run_heartbeat(
            self.settings,
            self.env,
            should_stop=self._stopping.is_set,
            run_id=run_id,
            watch_calls=self.tracker.llm_call,
        )
        self.last_report = report
        self.notifier.status(status_line(report, self.env.clock()))
        if self.settings.rewrite.use_batches:
            self._collect_rewrite_batch()
        self._continue_if_more(report)

    def _continue_if_more(self, report: HeartbeatReport) -> None:
        """A heartbeat that stopped for its per-run read or spend share with more waiting is
        followed at once by the next (queued on the one worker, behind any job due), until the
        work is done, the day's budget or a problem stops it, or the daemon is stopping. A
        heartbeat that committed nothing made no progress: the next waits for the schedule, so
        that nothing can spin (or pay) in a loop."""
        if not report.more_waiting or self.stopping or report.commit is None:
            return
        log.info("heartbeat.continuing", run_id=report.run_id, stop_reason=report.stop_reason)
        self.scheduler.add_job(
            self.heartbeat_job,
            DateTrigger(timezone=UTC),
            id=CONTINUE_HEARTBEAT_JOB,
            replace_existing=True,
            misfire_grace_time=None,
            # This heartbeat may itself be the continuation job, still running while it adds
            # the next: with one instance allowed, APScheduler would skip the next as "still
            # going" and the backfill would wait for the interval. The one worker thread runs
            # the two one after the other all the same.
            max_instances=2,
        )

    def _rewrite(self, run_id: str) -> None:
        from memoryd.jobs.rewrite import run_rewrite  # noqa: PLC0415 - only this job needs it

        run_rewrite(self.settings, self.env, run_id=run_id)

    def _collect_rewrite_batch(self) -> None:
        """Apply a weekly rewrite's Message Batch once it has ended (a no-op without one)."""
        from memoryd.jobs.rewrite import poll_rewrite_batch  # noqa: PLC0415 - as above

        if not self.stopping:
            poll_rewrite_batch(self.settings, self.env)
