"""`memoryd status [--json]`: what the daemon did, what it will do, what waits (docs/cli.md).

Reported: the last heartbeat (time, outcome, commit and counters), runs that started and never
finished, the next runs (`status` does not talk to the daemon: the next heartbeat is the one the
running daemon recorded in the state database, `memoryd.daemon.record`, else the last run plus
the configured interval), a failed reload the running daemon stands on, each source's lag in
bytes not read yet, quarantined chunks, over-long lines dropped unread in the last days
(`memoryd.extractors.dropped_lines`), pending entities, spend today (UTC day, every paid
job) against `budget.daily_usd`, the last rewrite, and `llm_unusable`: the LLM's
run-level problem (a refused key, a retired model, no credit, ...) with what to fix, from the run
that met it until a call succeeds again. With `git.push`, `sync`: unpushed and behind commits,
the last successful pull and push, and a push failing job after job; and
`repository_problem`: a detached HEAD or a person's rebase or merge in progress, which stop every
job (`memoryd.jobs.sync_health`).

Status is read-only and never waits: it never takes the single-writer lock (it only reads the pid
its holder wrote), it opens the state database with a tiny busy timeout (WAL readers are not
blocked by the daemon's writes), and a missing state database means "nothing ran yet", not an
error. The report is plain JSON data with a stable key order, so `--json` output is
deterministic for a given state and clock.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memoryd.daemon.record import daemon_heartbeat, standing_reload_failure
from memoryd.daemon.reprocess_status import reprocess_status
from memoryd.daemon.schedule import REWRITE_STALE_AFTER, rewrite_trigger
from memoryd.daemon.status_text import render_status as render_status  # noqa: PLC0414 - re-exported
from memoryd.extractors.counters import describe_counts
from memoryd.extractors.dropped_lines import recent_dropped
from memoryd.extractors.intake import AHEAD_KEY
from memoryd.jobs.environment import Environment
from memoryd.jobs.index_state import reading_status
from memoryd.jobs.lock import LOCK_NAME, read_holder
from memoryd.jobs.sources import build_sources
from memoryd.jobs.sync_health import repository_problem, sync_report
from memoryd.llm.base import MODEL_KINDS
from memoryd.settings import Settings, state_directory
from memoryd.sources.cursor import FileCursor
from memoryd.state.facade import DATABASE_FILE_NAME, State
from memoryd.state.meta import unusable_llm
from memoryd.state.runs import RunRecord
from memoryd.store.review import count_held_files

# Enough to ride out a WAL checkpoint; far below anything a person would call waiting.
STATUS_BUSY_TIMEOUT_MS = 200
_ERROR_CHARS = 300


def collect_status(settings: Settings, env: Environment) -> dict[str, Any]:
    """Gather the status report as JSON-ready data (see the module docstring)."""
    now = env.clock().astimezone(UTC)
    directory = state_directory(settings, env.environ)
    database = directory / DATABASE_FILE_NAME
    report: dict[str, Any] = {
        "now": _iso(now),
        "store": str(settings.store.path),
        "state": str(directory),
        "lock_holder_pid": _live_holder(directory / LOCK_NAME),
        # Skill tips and tacit lines the safety gate held (`memoryd review` lists them).
        "review_held": count_held_files(settings.store.path),
        "reading": reading_status(directory),
        "reprocess": reprocess_status(settings.store.path),  # requests not done yet
    }
    if not database.exists():
        report.update(_empty_state(settings, now))
        report["sources"] = _sources(settings, {})
        report["sync"] = sync_report(settings)
        report["repository_problem"] = repository_problem(settings.store.path)
        return report
    with State.open(database, busy_timeout_ms=STATUS_BUSY_TIMEOUT_MS) as state:
        cursors = {
            (record.agent, record.source_key, record.file_path): record.cursor_json
            for record in state.cursors.all()
        }
        last = state.runs.last("heartbeat")
        # `summary`: its counts in the words of its printed line and commit subject.
        report["last_heartbeat"] = (
            None if last is None else {**_run(last), "summary": describe_counts(last.counters)}
        )
        report["llm_unusable"] = _current_problem(unusable_llm(state.meta), settings)
        # A run with no end is running now or was killed; one recorded before its job's last
        # finished run was killed and has been superseded, so it is history, not status. Runs
        # are compared by the order they were recorded in: a clock correction moves their times.
        report["unfinished_runs"] = [
            _run(run)
            for run in state.runs.unfinished()
            if (done := state.runs.last(run.job)) is None or run.sequence > done.sequence
        ]
        daemons = daemon_heartbeat(state.meta, None if last is None else last.started_at)
        report["next_runs"] = _next_runs(
            settings, now, last, state.rewrites.last_success(), daemons
        )
        report["reload_failed"] = standing_reload_failure(state.meta)
        report["dropped_lines"] = recent_dropped(state.meta, now)
        report["quarantined"] = [
            {
                "chunk_key": record.chunk_key,
                "failures": record.failures,
                "quarantined_at": _iso(record.quarantined_at),
                "last_error": record.last_error[:_ERROR_CHARS],
            }
            for record in state.failures.quarantined()
        ]
        report["failing_chunks"] = len(state.failures.failing())
        report["pending_entities"] = [
            {
                "kind": entity.kind,
                "name": entity.entity_name,
                "facts": entity.facts,
                "since": entity.first_date.isoformat(),
            }
            for entity in state.pending.entities()
        ]
        day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        totals = state.usage.totals_between(day_start, day_start + timedelta(days=1))
        report["spend_today"] = {
            "day": day_start.date().isoformat(),
            "usd": round(totals.cost_usd, 6),
            "calls": totals.calls,
            "budget_usd": settings.budget.daily_usd,
            "exhausted": _daily_budget_exhausted(settings, now, totals.cost_usd, last),
        }
        last_rewrite = state.rewrites.last_success()
        rewrite_run = state.runs.last("rewrite")
        report["last_rewrite"] = {
            "succeeded_at": _iso(last_rewrite),
            "last_run": None if rewrite_run is None else _run(rewrite_run),
        }
        ahead = state.meta.get_json(AHEAD_KEY) or {}
    report["sources"] = _sources(settings, cursors, ahead)
    report["sync"] = sync_report(settings)
    report["repository_problem"] = repository_problem(settings.store.path)
    return report


def _daily_budget_exhausted(
    settings: Settings, now: datetime, spent_today: float, last: RunRecord | None
) -> bool:
    """Whether the daily ceiling stops heartbeats today. The budget refuses a call when what was
    spent plus the call's estimate would pass the ceiling, so a heartbeat can stop for it with
    spend still below it: a last heartbeat that stopped on "budget" today counts, unless the
    per-heartbeat ceiling may have stopped it instead. That ceiling never refuses a heartbeat's
    first call, and a call it refused the daily one refused too when less was left of the day
    than of the heartbeat's share."""
    daily = settings.budget.daily_usd
    if daily <= 0:
        return False
    if spent_today >= daily:
        return True
    if last is None or last.counters.get("stop_reason") != "budget" or last.finished_at is None:
        return False
    if last.finished_at.astimezone(UTC).date() != now.date():
        return False
    per_heartbeat = settings.budget.heartbeat_usd
    run_cost = float(last.counters.get("cost_usd") or 0)
    return per_heartbeat <= 0 or run_cost <= 0 or daily - spent_today <= per_heartbeat - run_cost


def _current_problem(problem: dict[str, Any] | None, settings: Settings) -> dict[str, Any] | None:
    """The recorded LLM problem, unless the configuration has moved on from it since: a problem
    with a model neither `llm.model` nor `llm.rewrite_model` names any more (the operator's fix
    for a retired model), or any problem once the provider is `markers`."""
    if problem is None or settings.llm.provider == "markers":
        return None
    if problem.get("kind") in MODEL_KINDS and problem.get("model") not in (
        settings.llm.model,
        settings.llm.rewrite_model,
    ):
        return None
    return problem


def _empty_state(settings: Settings, now: datetime) -> dict[str, Any]:
    return {
        "last_heartbeat": None,
        "llm_unusable": None,
        "unfinished_runs": [],
        "next_runs": _next_runs(settings, now, None, None),
        "reload_failed": None,
        "dropped_lines": [],
        "quarantined": [],
        "failing_chunks": 0,
        "pending_entities": [],
        "spend_today": {
            "day": now.date().isoformat(),
            "usd": 0.0,
            "calls": 0,
            "budget_usd": settings.budget.daily_usd,
            "exhausted": False,
        },
        "last_rewrite": {"succeeded_at": None, "last_run": None},
    }


def _run(run: RunRecord) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "job": run.job,
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "outcome": run.outcome,
        "commit": run.commit_sha,
        "counters": {key: run.counters[key] for key in sorted(run.counters)},
    }


def _next_runs(
    settings: Settings,
    now: datetime,
    last: RunRecord | None,
    last_rewrite: datetime | None,
    daemons: datetime | None = None,
) -> dict[str, Any]:
    schedule = settings.schedule
    if daemons is not None:
        heartbeat: datetime | None = daemons  # the running daemon's own trigger
    elif last is None:
        heartbeat = None  # the daemon runs one as soon as it starts
    else:
        heartbeat = last.started_at + timedelta(minutes=schedule.heartbeat_minutes)
    rewrite = rewrite_trigger(schedule).get_next_fire_time(None, now.astimezone(schedule.zone))
    return {
        "heartbeat": _iso(heartbeat),
        "heartbeat_overdue": heartbeat is not None and heartbeat < now,
        "rewrite": _iso(rewrite),
        # The daemon also rewrites right after it starts when the last success is this old.
        "rewrite_catch_up_at_start": last_rewrite is None
        or now - last_rewrite > REWRITE_STALE_AFTER,
    }


def _sources(
    settings: Settings,
    cursors: dict[tuple[str, str, str], str],
    ahead: dict[str, list[list[int]]] | None = None,
) -> list[dict[str, Any]]:
    """Per source, what is not read yet. A file whose cursor is held back behind a chunk that
    failed has later lines filed already (`ahead`, line ranges): those are not counted."""
    result = []
    for source in build_sources(settings):
        mine = {
            path: FileCursor.from_json(text)
            for (agent, key, path), text in cursors.items()
            if agent == source.agent and key == source.key
        }
        report = source.reader.lag_report(mine)
        lags = report.lags
        filed_ahead = 0
        for path, ranges in (ahead or {}).items():
            cursor = mine.get(path)
            if cursor is not None and lags.get(path) == _size(path) - cursor.position > 0:
                filed = filed_ahead_bytes(Path(path), cursor, ranges)
                lags[path] -= filed
                filed_ahead += filed
        result.append(
            {
                "agent": source.agent,
                "source": source.key,
                "files": len(lags),
                "lag_bytes": sum(lags.values()),
                "filed_ahead_bytes": filed_ahead,
                "lagging_files": {path: lag for path, lag in sorted(lags.items()) if lag},
                # What cannot be read: never shown as an empty source.
                "unreadable": report.unreadable,
                "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
            }
        )
    return result


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def filed_ahead_bytes(path: Path, cursor: FileCursor, ranges: list[list[int]]) -> int:
    """The bytes of the lines in `ranges` (1-based, inclusive) after the cursor's position: what
    later chunks of a file filed while an earlier one waits. 0 when the file cannot be read."""
    wanted = [(int(first), int(last)) for first, last in ranges]
    total = 0
    try:
        with path.open("rb") as handle:
            handle.seek(cursor.position)
            for number, line in enumerate(handle, start=cursor.line + 1):
                if number > max((last for _first, last in wanted), default=0):
                    break
                if any(first <= number <= last for first, last in wanted):
                    total += len(line)
    except OSError:
        return 0
    return total


def _live_holder(lock: Path) -> int | None:
    """The pid in the lock file if that process is alive (the file is read, never locked)."""
    pid = read_holder(lock)
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, but another user's
    return pid


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()
