"""What the running daemon leaves in the state database for `memoryd status`, which never talks
to it: its heartbeat schedule as the scheduler really holds it, and a reload that failed.

A SIGHUP that changes `schedule.heartbeat_minutes` restarts the interval at the reload, so the
next heartbeat is the reload time plus the new interval, not the last run plus it; and a failed
reload leaves the daemon on settings the file no longer says. Both are recorded under the
daemon's pid (meta keys `daemon.schedule` and `daemon.reload_failed`) when it starts and at each
reload, and `status` believes them only while that process is alive. A failed reload stands
(`status` exits 78, systemd's `STATUS=` line leads with it) until a later reload succeeds or the
daemon restarts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger

from memoryd.daemon.notify import Notifier
from memoryd.daemon.schedule import HEARTBEAT_JOB, REWRITE_JOB, heartbeat_trigger, rewrite_trigger
from memoryd.jobs.environment import Environment, open_state
from memoryd.logs import get_logger
from memoryd.settings import ScheduleSettings, Settings
from memoryd.state.errors import StateError
from memoryd.state.meta import Meta

log = get_logger(__name__)

SCHEDULE_KEY = "daemon.schedule"
RELOAD_FAILED_KEY = "daemon.reload_failed"


class DaemonRecord:
    """The daemon's side: records its schedule and reload outcomes, and keeps systemd's status
    line leading with a failed reload while it stands."""

    def __init__(
        self,
        scheduler: BaseScheduler,
        notifier: Notifier,
        env: Environment,
        settings: Callable[[], Settings],
    ) -> None:
        self._scheduler = scheduler
        self._notifier = notifier
        self._env = env
        self._settings = settings

    def started(self) -> str | None:
        """The scheduler runs: record its heartbeat schedule, forget an older daemon's failed
        reload; return the next heartbeat (ISO 8601, UTC)."""
        return self._record(failure=None)

    def reloaded(self) -> str | None:
        """A reload succeeded (its schedule applied): as `started`."""
        self._notifier.set_standing(None)
        return self._record(failure=None)

    def reload_failed(self, path: Path, problems: Sequence[str]) -> bool:
        """Log `config.reload_failed`, show it in `STATUS=` and record it for `status`; the old
        settings stay. Return False (the reload's result)."""
        log.error("config.reload_failed", path=str(path), problems=list(problems))
        first = problems[0] if problems else "invalid configuration"
        self._notifier.set_standing(
            f"RELOAD FAILED ({path}): {first}; running on the old configuration"
        )
        at = self._env.clock().astimezone(UTC).isoformat()
        self._record(failure={"path": str(path), "problems": list(problems), "at": at})
        return False

    def _record(self, failure: dict[str, Any] | None) -> str | None:
        job = self._scheduler.get_job(HEARTBEAT_JOB)
        trigger = None if job is None else job.trigger
        start = trigger.start_date if isinstance(trigger, IntervalTrigger) else None
        start_text = None if start is None else iso(start)
        schedule = {
            "pid": os.getpid(),
            "heartbeat_start": start_text,
            "heartbeat_minutes": self._settings().schedule.heartbeat_minutes,
        }
        try:
            with open_state(self._settings(), self._env) as state:
                state.meta.set_json(SCHEDULE_KEY, schedule)
                if failure is None:
                    state.meta.delete(RELOAD_FAILED_KEY)
                else:
                    state.meta.set_json(RELOAD_FAILED_KEY, {"pid": os.getpid(), **failure})
        except (StateError, OSError) as error:
            # Status then falls back on the configuration file; the daemon's work goes on.
            log.warning("daemon.record_failed", error=str(error))
        return start_text


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, but another user's
    return True


def daemon_heartbeat(meta: Meta, last_started: datetime | None) -> datetime | None:
    """The running daemon's next heartbeat: the first slot of its interval trigger after the
    last heartbeat started (the start itself when none did since). None when no live daemon
    recorded its schedule."""
    record = meta.get_json(SCHEDULE_KEY)
    if not isinstance(record, dict) or not _alive(record.get("pid")):
        return None
    start_text, minutes = record.get("heartbeat_start"), record.get("heartbeat_minutes")
    if not isinstance(start_text, str) or not isinstance(minutes, int) or minutes <= 0:
        return None
    start = datetime.fromisoformat(start_text)
    if last_started is None or last_started < start:
        return start
    interval = timedelta(minutes=minutes)
    return start + interval * ((last_started - start) // interval + 1)


def standing_reload_failure(meta: Meta) -> dict[str, Any] | None:
    """The failed reload the running daemon still stands on, or None."""
    record = meta.get_json(RELOAD_FAILED_KEY)
    if not isinstance(record, dict) or not _alive(record.get("pid")):
        return None
    return {key: record.get(key) for key in ("path", "problems", "at")}


def reschedule(scheduler: BaseScheduler, old: ScheduleSettings, new: ScheduleSettings) -> None:
    """Apply a reloaded schedule: a new interval starts counting at the reload."""
    if new.heartbeat_minutes != old.heartbeat_minutes:
        scheduler.reschedule_job(HEARTBEAT_JOB, trigger=heartbeat_trigger(new))
        scheduler.modify_job(HEARTBEAT_JOB, misfire_grace_time=new.heartbeat_minutes * 60)
    if (new.rewrite_cron, new.timezone) != (old.rewrite_cron, old.timezone):
        scheduler.reschedule_job(REWRITE_JOB, trigger=rewrite_trigger(new))
