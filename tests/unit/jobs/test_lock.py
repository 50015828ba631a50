"""The single-writer lock, exercised across real processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.errors import EXIT_TEMPFAIL, LockHeldError
from memoryd.jobs.lock import LOCK_NAME, after_unlock, read_holder, single_writer

HOLDER = """
import sys
from pathlib import Path
from memoryd.jobs.lock import single_writer
with single_writer(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def start_holder(state_dir: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_holder_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    with start_holder(tmp_path) as child:
        waits: list[float] = []
        with (
            pytest.raises(LockHeldError) as caught,
            single_writer(tmp_path, wait_seconds=1.0, sleep=waits.append, poll_seconds=0.25),
        ):
            pass
        assert caught.value.holder_pid == child.pid
        assert str(child.pid) in str(caught.value)
        assert caught.value.exit_code == EXIT_TEMPFAIL
        assert waits == [0.25, 0.25, 0.25, 0.25]
        assert child.stdin is not None
        child.stdin.write("done\n")
        child.stdin.flush()
    # The holder is gone: the lock is free again.
    with single_writer(tmp_path):
        assert read_holder(tmp_path / LOCK_NAME) is not None


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    with start_holder(tmp_path) as child:
        child.kill()
    with single_writer(tmp_path) as path:
        assert path.exists()


def test_a_second_block_in_the_same_process_is_refused_too(tmp_path: Path) -> None:
    with single_writer(tmp_path), pytest.raises(LockHeldError), single_writer(tmp_path):
        pass
    with single_writer(tmp_path):
        pass


def test_work_after_a_commit_runs_once_the_lock_is_released(tmp_path: Path) -> None:
    seen: list[str] = []

    def probe() -> None:
        # Another process could take the lock now: it is free.
        with single_writer(tmp_path, wait_seconds=0):
            seen.append("ran unlocked")

    with single_writer(tmp_path):
        after_unlock(probe)
        assert seen == []
    assert seen == ["ran unlocked"]
    after_unlock(lambda: seen.append("no lock: at once"))
    assert seen == ["ran unlocked", "no lock: at once"]
