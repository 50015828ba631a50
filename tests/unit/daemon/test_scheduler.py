"""The daemon in-process: its schedule, reload, watchdog, start-up and stop."""

from __future__ import annotations

import argparse
import io
import signal
import socket
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.fakes.configs import ops_config

from memoryd.cli.run import cmd_run
from memoryd.daemon import scheduler
from memoryd.daemon.notify import Notifier
from memoryd.daemon.schedule import (
    CATCHUP_REWRITE_JOB,
    HEARTBEAT_JOB,
    REWRITE_JOB,
    STARTUP_HEARTBEAT_JOB,
    WATCHDOG_JOB,
)
from memoryd.daemon.scheduler import Daemon, DaemonOptions, StopPolicy
from memoryd.jobs.environment import Environment, open_state
from memoryd.settings import load_settings
from memoryd.store.layout import init_store

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def write_config(root: Path, heartbeat_minutes: int = 30, cron: str = "0 3 * * sun") -> Path:
    path = root / "memoryd.toml"
    schedule = f'[schedule]\nheartbeat_minutes = {heartbeat_minutes}\nrewrite_cron = "{cron}"'
    path.write_text(ops_config(llm='provider = "markers"', extra=schedule), encoding="utf-8")
    return path


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    init_store(tmp_path / "store", "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    write_config(tmp_path)
    return tmp_path


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "n.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(10)
        yield sock, path


def make_daemon(
    root: Path, environ: dict[str, str] | None = None, monotonic: FakeMonotonic | None = None
) -> Daemon:
    config = load_settings(root / "memoryd.toml")
    env = Environment(environ=environ or {}, clock=lambda: NOW)
    options = DaemonOptions(
        stop=StopPolicy(grace_seconds=0.5, deadline_seconds=10),
        monotonic=monotonic or FakeMonotonic(),
        hard_exit=lambda code: None,
    )
    return Daemon(config, env, Notifier(environ or {}), options)


def test_the_schedule_has_explicit_defaults_and_a_catch_up_rewrite(root: Path) -> None:
    daemon = make_daemon(root, {"NOTIFY_SOCKET": "/nonexistent", "WATCHDOG_USEC": "20000000"})
    daemon._schedule()
    jobs = {job.id: job for job in daemon.scheduler.get_jobs()}
    assert set(jobs) == {
        STARTUP_HEARTBEAT_JOB,
        HEARTBEAT_JOB,
        REWRITE_JOB,
        CATCHUP_REWRITE_JOB,
        WATCHDOG_JOB,
    }
    assert jobs[HEARTBEAT_JOB].misfire_grace_time == 30 * 60
    assert jobs[HEARTBEAT_JOB].trigger.interval == timedelta(minutes=30)
    assert jobs[STARTUP_HEARTBEAT_JOB].misfire_grace_time is None
    assert jobs[WATCHDOG_JOB].executor == "watchdog"
    assert jobs[WATCHDOG_JOB].trigger.interval == timedelta(seconds=10)
    fire = jobs[REWRITE_JOB].trigger.get_next_fire_time(None, NOW)
    assert fire == datetime(2026, 3, 15, 3, 0, tzinfo=UTC)  # Sunday, not Monday


def test_a_recent_rewrite_means_no_catch_up_and_no_watchdog_outside_systemd(root: Path) -> None:
    daemon = make_daemon(root)
    with open_state(daemon.settings, daemon.env) as state:
        state.rewrites.set_last_success(NOW - timedelta(days=6))
    assert not daemon.rewrite_overdue()
    daemon._schedule()
    assert {job.id for job in daemon.scheduler.get_jobs()} == {
        STARTUP_HEARTBEAT_JOB,
        HEARTBEAT_JOB,
        REWRITE_JOB,
    }
    with open_state(daemon.settings, daemon.env) as state:
        state.rewrites.set_last_success(NOW - timedelta(days=8))
    assert daemon.rewrite_overdue()


def test_reload_applies_a_valid_configuration_and_keeps_the_old_one_otherwise(
    root: Path,
) -> None:
    daemon = make_daemon(root)
    daemon._schedule()
    write_config(root, heartbeat_minutes=45, cron="30 4 * * mon")
    with capture_logs() as logs:
        assert daemon.reload()
    assert logs[-1]["event"] == "config.reloaded"
    assert logs[-1]["changed"] == ["schedule.heartbeat_minutes", "schedule.rewrite_cron"]
    assert daemon.settings.schedule.heartbeat_minutes == 45
    jobs = {job.id: job for job in daemon.scheduler.get_jobs()}
    assert jobs[HEARTBEAT_JOB].trigger.interval == timedelta(minutes=45)
    assert jobs[REWRITE_JOB].trigger.get_next_fire_time(None, NOW) == datetime(
        2026, 3, 16, 4, 30, tzinfo=UTC
    )

    write_config(root, heartbeat_minutes=0)  # below the minimum
    with capture_logs() as logs:
        assert not daemon.reload()
    assert logs[-1]["event"] == "config.reload_failed"
    assert "heartbeat_minutes" in logs[-1]["problems"][0]
    assert daemon.settings.schedule.heartbeat_minutes == 45

    write_config(root, cron="0 3 * * 0")  # a cross-field problem check_environment catches
    with capture_logs() as logs:
        assert not daemon.reload()
    assert "day of week with names" in logs[-1]["problems"][0]
    assert daemon.settings.schedule.rewrite_cron == "30 4 * * mon"


def test_the_watchdog_stops_pinging_while_a_job_is_stuck(
    root: Path, notify_socket: tuple[socket.socket, str]
) -> None:
    sock, path = notify_socket
    clock = FakeMonotonic()
    daemon = make_daemon(root, {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "30000000"}, clock)
    daemon.watchdog_job()
    assert sock.recv(100) == b"WATCHDOG=1"

    daemon.tracker.begin("heartbeat", "r1")
    clock.now += 60 * 60 * 3  # far past any deadline without a sign of progress
    with capture_logs() as logs:
        daemon.watchdog_job()
        daemon.watchdog_job()
    assert [e["event"] for e in logs] == ["watchdog.stalled"]  # logged once
    sock.settimeout(0.2)
    with pytest.raises(TimeoutError):
        sock.recv(100)

    with daemon.tracker.llm_call():  # progress again
        pass
    daemon.watchdog_job()
    sock.settimeout(10)
    assert sock.recv(100) == b"WATCHDOG=1"


def test_a_stop_before_start_exits_0_without_running_a_job(root: Path) -> None:
    daemon = make_daemon(root)
    daemon.request_stop("test")
    with capture_logs() as logs:
        assert daemon.run() == 0
    events = [e["event"] for e in logs]
    assert "heartbeat.started" not in events
    assert events[-1] == "daemon.stopped"


def test_run_in_process_heartbeat_then_catch_up_rewrite_then_stop(
    root: Path, notify_socket: tuple[socket.socket, str]
) -> None:
    sock, path = notify_socket
    (root / "logs" / "a.jsonl").write_text(
        '{"role": "user", "content": "remember: person Jane Doe: Joined Acme as CTO",'
        ' "timestamp": "2026-03-01T09:00:00Z"}\n',
        encoding="utf-8",
    )
    daemon = make_daemon(root, {"NOTIFY_SOCKET": path})
    messages: list[str] = []
    scheduled: dict[str, tuple[bool, int, int | None]] = {}

    def watch() -> None:
        # READY, then the heartbeat's STATUS; the catch-up rewrite follows on the one worker.
        while not any(m.startswith("STATUS=last heartbeat") for m in messages):
            messages.append(sock.recv(4096).decode())
        for job in daemon.scheduler.get_jobs():
            scheduled[job.id] = (job.coalesce, job.max_instances, job.misfire_grace_time)
        daemon.request_stop("test")

    watcher = threading.Thread(target=watch)
    watcher.start()
    with capture_logs() as logs:
        assert daemon.run() == 0
    watcher.join(10)
    assert messages[0].startswith("READY=1")
    assert daemon.last_report is not None
    assert daemon.last_report.counters.facts_added == 1
    events = [e["event"] for e in logs]
    assert events.index("daemon.ready") < events.index("heartbeat.started")
    assert events[-1] == "daemon.stopped"
    assert logs[-1]["abandoned_job"] is None
    # Explicit defaults: coalesce, one instance, a generous grace time.
    assert scheduled[HEARTBEAT_JOB] == (True, 1, 30 * 60)
    assert scheduled[REWRITE_JOB] == (True, 1, 24 * 3600)


def test_a_rewrite_may_go_longer_without_progress_than_a_heartbeat(root: Path) -> None:
    daemon = make_daemon(root)
    heartbeat = daemon.stuck_deadline("heartbeat")
    assert heartbeat == 120 * 5 * 2 + 600  # one call with all its retries, twice, plus margin
    assert daemon.stuck_deadline("rewrite") > heartbeat


def test_the_daemon_never_exits_75_even_when_it_cannot_start(root: Path) -> None:
    config = load_settings(root / "memoryd.toml")
    (root / "state").mkdir()
    # Another process holds a fresh (not yet WAL) database exclusively: opening it times out
    # with StateBusyError, a transient error that a one-shot command would turn into 75.
    blocker = sqlite3.connect(root / "state" / "state.db", isolation_level=None)
    blocker.execute("CREATE TABLE held (x)")
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with capture_logs() as logs:
            code = cmd_run(argparse.Namespace(), config, {}, io.StringIO())
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert code == 1
    assert logs[-1]["event"] == "daemon.failed"
    assert logs[-1]["error_type"] == "StateBusyError"


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_both_stop_and_tell_systemd(
    root: Path, notify_socket: tuple[socket.socket, str], number: signal.Signals
) -> None:
    sock, path = notify_socket
    daemon = make_daemon(root, {"NOTIFY_SOCKET": path})
    with capture_logs() as logs:
        daemon._on_signal(number)
        daemon._on_signal(number)  # a second signal changes nothing
    assert daemon.stopping
    assert sock.recv(100) == b"STOPPING=1"
    assert [(e["event"], e["reason"]) for e in logs] == [("daemon.stopping", number.name)]


def test_listeners_log_missed_runs_and_errors(root: Path) -> None:
    from apscheduler.events import (
        EVENT_JOB_ERROR,
        EVENT_JOB_MAX_INSTANCES,
        EVENT_JOB_MISSED,
        JobExecutionEvent,
    )

    daemon = make_daemon(root)
    with capture_logs() as logs:
        daemon._on_job_event(JobExecutionEvent(EVENT_JOB_MISSED, HEARTBEAT_JOB, "default", NOW))
        daemon._on_job_event(
            JobExecutionEvent(EVENT_JOB_MAX_INSTANCES, HEARTBEAT_JOB, "default", NOW)
        )
        daemon._on_job_event(
            JobExecutionEvent(
                EVENT_JOB_ERROR, REWRITE_JOB, "default", NOW, exception=OSError("boom")
            )
        )
    assert [(e["event"], e["job"]) for e in logs] == [
        ("job.missed", HEARTBEAT_JOB),
        ("job.missed", HEARTBEAT_JOB),
        ("job.failed", REWRITE_JOB),
    ]
    assert logs[0]["scheduled"] == NOW.isoformat()
    assert logs[1]["reason"] == "the previous run was still going"
    assert "boom" in logs[2]["error"]


def test_a_heartbeat_that_left_work_for_its_share_is_followed_at_once(root: Path) -> None:
    from memoryd.daemon.schedule import CONTINUE_HEARTBEAT_JOB
    from memoryd.extractors.report import HeartbeatReport

    daemon = make_daemon(root)
    daemon._continue_if_more(HeartbeatReport("r1", commit="c1"))  # nothing waiting
    assert daemon.scheduler.get_job(CONTINUE_HEARTBEAT_JOB) is None
    # More waiting but nothing committed: no progress, so no loop; the schedule decides.
    daemon._continue_if_more(HeartbeatReport("r0", more_waiting=True))
    assert daemon.scheduler.get_job(CONTINUE_HEARTBEAT_JOB) is None
    with capture_logs() as logs:
        daemon._continue_if_more(HeartbeatReport("r2", more_waiting=True, commit="c2"))
    job = daemon.scheduler.get_job(CONTINUE_HEARTBEAT_JOB)
    assert job is not None and job.misfire_grace_time is None
    # The continuation adds its own successor while it still runs: two instances allowed.
    assert job.max_instances == 2
    assert [e["run_id"] for e in logs if e["event"] == "heartbeat.continuing"] == ["r2"]
    stopping = make_daemon(root)
    stopping._stopping.set()
    stopping._continue_if_more(HeartbeatReport("r3", more_waiting=True, commit="c3"))
    assert stopping.scheduler.get_job(CONTINUE_HEARTBEAT_JOB) is None  # stopping: no more


def test_the_daemon_runs_its_jobs_in_a_long_lived_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memoryd run` tells its jobs that the process goes on (`Environment.long_lived`): its
    heartbeats keep their catalogue for the next one (`memoryd.store.catalog._snapshot`)."""
    config = load_settings(root / "memoryd.toml")
    made: list[Environment] = []

    class Recorded:
        def __init__(self, _config: object, env: Environment, _notifier: object) -> None:
            made.append(env)

        def run(self) -> int:
            return 0

    monkeypatch.setattr(scheduler, "Daemon", Recorded)
    assert cmd_run(argparse.Namespace(), config, {}, io.StringIO()) == 0
    assert [env.long_lived for env in made] == [True]
    assert not Environment.live({}).long_lived  # a one-shot command's
