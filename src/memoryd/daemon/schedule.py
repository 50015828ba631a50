"""The schedule's vocabulary: job ids, triggers, deadlines (when a job counts as stuck), and
the daemon's status line.

Shared by the daemon (`memoryd.daemon.scheduler`) and by `memoryd status`, which computes the
next runs from the same triggers without importing the scheduler itself. Triggers take `now` as
an argument, so the next fire times are plain functions of the configuration and a clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from memoryd.extractors.counters import describe_counts
from memoryd.settings import LLMSettings, ScheduleSettings
from memoryd.wording import plural

if TYPE_CHECKING:
    from memoryd.extractors.report import HeartbeatReport

HEARTBEAT_JOB = "heartbeat"
STARTUP_HEARTBEAT_JOB = "heartbeat-at-start"
# A heartbeat started at once because the previous one left work for its per-run share.
CONTINUE_HEARTBEAT_JOB = "heartbeat-continue"
REWRITE_JOB = "rewrite"
CATCHUP_REWRITE_JOB = "rewrite-catch-up"
WATCHDOG_JOB = "watchdog"
REWRITE_STALE_AFTER = timedelta(days=7)
# APScheduler's default is 1 s: a run that starts later (a suspended VPS, a busy worker) would be
# skipped. An hour late is still worth running.
DEFAULT_MISFIRE_GRACE_SECONDS = 3600
# A weekly job that runs a day late is still worth running; a heartbeat later than one interval
# is superseded by the next one anyway.
REWRITE_MISFIRE_GRACE_SECONDS = 24 * 3600
# How long past its last sign of progress a job counts as stuck, on top of the time the LLM
# client may legitimately spend on one call with all its retries.
STUCK_MARGIN_SECONDS = 600.0
# A weekly rewrite of a large store makes hundreds of sequential calls without telling us.
REWRITE_DEADLINE_SECONDS = 6 * 3600.0


def heartbeat_trigger(schedule: ScheduleSettings) -> IntervalTrigger:
    return IntervalTrigger(minutes=schedule.heartbeat_minutes, timezone=UTC)


def rewrite_trigger(schedule: ScheduleSettings) -> CronTrigger:
    return CronTrigger.from_crontab(schedule.rewrite_cron, timezone=schedule.zone)


def stuck_deadline(job: str | None, llm: LLMSettings) -> float:
    """Seconds without a sign of progress after which `job` counts as stuck.

    A heartbeat shows progress at every model call, so its deadline is what one call may
    take with all its retries, plus a margin. The rewrite's calls are not watched (it runs
    its own client), so it gets the whole of REWRITE_DEADLINE_SECONDS.
    """
    if job == "rewrite":
        return REWRITE_DEADLINE_SECONDS
    return llm.timeout_seconds * llm.max_attempts * 2 + STUCK_MARGIN_SECONDS


def status_line(report: HeartbeatReport, at: datetime) -> str:
    """The heartbeat's summary for `systemctl status` (one line). While the LLM is unusable
    (a refused key, a retired model, no credit, ...) it says so and what to fix instead."""
    when = f"{at.astimezone(UTC):%Y-%m-%d %H:%M}Z"
    problem = report.unusable
    if problem is not None:
        status = f"HTTP {problem.status_code} " if problem.status_code else ""
        return (
            f"LLM UNUSABLE ({problem.kind}, {status}{problem.endpoint or 'endpoint unknown'}, "
            f"model {problem.model}) at the heartbeat of {when}: {problem.remedy}"
        )
    commit = report.commit[:12] if report.commit else "none"
    sync = f"SYNC FAILING ({report.sync_problem}); " if report.sync_problem else ""
    return (
        f"{sync}last heartbeat {when} {report.outcome}: "
        f"{describe_counts(report.counters)}; {plural(report.chunks_extracted, 'chunk')} sent, "
        f"{report.chunks_failed} failed, ${report.cost_usd:.4f}, commit {commit}"
    )
