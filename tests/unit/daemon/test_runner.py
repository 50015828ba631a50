"""The job wrapper and the job tracker: lock, log context, errors, stop decisions."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import structlog
from structlog.testing import capture_logs

from memoryd.daemon.runner import JobRunner, JobTracker
from memoryd.errors import EXIT_CONFIG, IgnoredStoreError


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


HOLDER = """
import sys
from pathlib import Path
from memoryd.jobs.lock import single_writer
with single_writer(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_job_runs_under_the_lock_with_its_own_log_context(tmp_path: Path) -> None:
    tracker = JobTracker(FakeMonotonic())
    runner = JobRunner(tracker, lambda: tmp_path)
    seen: dict[str, object] = {}

    def body(run_id: str) -> None:
        seen.update(structlog.contextvars.get_contextvars())
        seen["run_id_argument"] = run_id
        seen["holder"] = (tmp_path / "memoryd.lock").read_text().strip()
        seen["state"] = tracker.snapshot().job

    structlog.contextvars.bind_contextvars(stale="from an earlier job")
    assert runner.run("heartbeat", body)
    assert seen["job"] == "heartbeat"
    assert seen["run_id"] == seen["run_id_argument"]
    assert "stale" not in seen
    assert seen["holder"] == str(os.getpid())
    assert seen["state"] == "heartbeat"
    assert tracker.snapshot().job is None
    assert structlog.contextvars.get_contextvars() == {}


def test_a_failing_job_is_logged_and_the_runner_carries_on(tmp_path: Path) -> None:
    tracker = JobTracker(FakeMonotonic())
    runner = JobRunner(tracker, lambda: tmp_path)

    def broken(_run_id: str) -> None:
        raise RuntimeError("disk on fire")

    with capture_logs() as logs:
        assert not runner.run("rewrite", broken)
    assert logs[-1]["event"] == "job.failed"
    assert logs[-1]["error"] == "disk on fire"
    assert logs[-1]["error_type"] == "RuntimeError"
    assert tracker.snapshot().job is None
    assert runner.run("rewrite", lambda _run_id: None)  # the lock was released


def test_memoryds_own_error_is_logged_without_a_traceback_and_others_with_one(
    tmp_path: Path,
) -> None:
    runner = JobRunner(JobTracker(FakeMonotonic()), lambda: tmp_path)

    def store_gone(_run_id: str) -> None:
        raise IgnoredStoreError(tmp_path / "store", tmp_path, "store/", ".gitignore:1")

    def broken(_run_id: str) -> None:
        raise RuntimeError("disk on fire")

    with capture_logs() as logs:
        assert not runner.run("heartbeat", store_gone)
        assert not runner.run("heartbeat", broken)
    own, other = logs[-2], logs[-1]
    assert own["event"] == other["event"] == "job.failed"
    assert own["error_type"] == "IgnoredStoreError"
    assert own["exit_code"] == EXIT_CONFIG
    assert "exc_info" not in own
    assert isinstance(other["exc_info"], RuntimeError)


def test_a_job_that_finds_the_lock_taken_is_skipped_naming_the_holder(tmp_path: Path) -> None:
    runner = JobRunner(JobTracker(FakeMonotonic()), lambda: tmp_path)
    ran: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "held"
        with capture_logs() as logs:
            assert not runner.run("heartbeat", ran.append)
        holder.stdin.write("\n")
        holder.stdin.flush()
    assert ran == []
    assert logs[-1]["event"] == "heartbeat.skipped"
    assert logs[-1]["holder_pid"] == holder.pid


def test_an_idle_worker_is_stoppable_at_once() -> None:
    tracker = JobTracker(FakeMonotonic())
    assert tracker.wait_until_stoppable(grace_seconds=5, deadline_seconds=60)


def test_a_job_waiting_on_the_llm_is_abandoned_after_the_grace() -> None:
    clock = FakeMonotonic()
    tracker = JobTracker(clock)
    tracker.begin("heartbeat", "r1")
    with tracker.llm_call():
        assert tracker.snapshot().in_llm_call
        assert not tracker.wait_until_stoppable(grace_seconds=0, deadline_seconds=60)
    assert not tracker.snapshot().in_llm_call


def test_overlapping_llm_calls_keep_the_mark_until_the_last_one_returns() -> None:
    tracker = JobTracker(FakeMonotonic())
    tracker.begin("heartbeat", "r1")
    with tracker.llm_call():
        with tracker.llm_call():
            assert tracker.snapshot().in_llm_call
        assert tracker.snapshot().in_llm_call  # the first call is still in flight
    assert not tracker.snapshot().in_llm_call


def test_a_job_at_work_on_files_is_waited_for_until_it_ends() -> None:
    tracker = JobTracker(FakeMonotonic())
    tracker.begin("heartbeat", "r1")
    waiting = threading.Event()
    result: list[bool] = []

    def wait() -> None:
        waiting.set()
        result.append(tracker.wait_until_stoppable(grace_seconds=0, deadline_seconds=60))

    waiter = threading.Thread(target=wait)
    waiter.start()
    waiting.wait(5)
    tracker.end()
    waiter.join(10)
    assert result == [True]


def test_stuck_time_counts_from_the_last_sign_of_progress() -> None:
    clock = FakeMonotonic()
    tracker = JobTracker(clock)
    assert tracker.stuck_for() == 0.0
    tracker.begin("heartbeat", "r1")
    clock.now += 50
    assert tracker.stuck_for() == 50
    with tracker.llm_call():
        clock.now += 10
    assert tracker.stuck_for() == 0  # the call returning is progress
    clock.now += 7
    assert tracker.stuck_for() == 7
    tracker.end()
    assert tracker.stuck_for() == 0.0


def test_the_run_id_bound_to_the_logs_is_the_one_the_job_is_given(tmp_path: Path) -> None:
    runner = JobRunner(JobTracker(FakeMonotonic()), lambda: tmp_path)
    seen: dict[str, object] = {}

    def body(run_id: str) -> None:
        seen.update(structlog.contextvars.get_contextvars(), given=run_id)

    assert runner.run("rewrite", body)
    assert seen["job"] == "rewrite"
    assert seen["run_id"] == seen["given"]
