"""Two writers, and starting before `init`: real `memoryd` subprocesses over one store.

- a second `memoryd run` on one configuration is refused at once (exit 78), naming the first's
  pid, and the first carries on;
- a one-shot heartbeat with another state folder on the same store finds the store-level lock
  taken (exit 75, naming the holder) while a writer holds it, and files once it is free;
- `run` and `heartbeat` before `memoryd init` exit 78 with the fix and no traceback (`check`
  warns with the same fix).

Synchronization waits on observable things with deadlines: the daemon's JSON log lines, the
process's exit. Nothing sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.configs import ops_config
from tests.support.daemon_process import DaemonProcess

from memoryd.errors import EXIT_CONFIG, EXIT_OK, EXIT_TEMPFAIL
from memoryd.jobs.lock import held_lock, store_lock_path
from memoryd.store.layout import init_store

REPO_ROOT = Path(__file__).resolve().parents[2]


def write_config(root: Path, name: str, *, state: str = "state") -> Path:
    (root / "logs").mkdir(exist_ok=True)
    config = root / name
    extra = '[schedule]\nheartbeat_minutes = 600\nrewrite_cron = "0 3 1 1 *"\n'
    config.write_text(
        ops_config(llm='provider = "markers"', state=state, extra=extra), encoding="utf-8"
    )
    return config


def say(root: Path, text: str) -> None:
    line = {"role": "user", "content": text, "timestamp": "2026-03-01T09:00:00Z"}
    with (root / "logs" / "a.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def environment() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
    return {**{k: os.environ[k] for k in keep if k in os.environ}, "PYTHONPATH": str(REPO_ROOT)}


def memoryd(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", str(config), "--log-format", "json", *args],
        env=environment(),
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class Daemon(DaemonProcess):
    """`memoryd run` on `config`."""

    def __init__(self, config: Path) -> None:
        argv = [
            sys.executable,
            "-m",
            "memoryd",
            "--config",
            str(config),
            "--log-format=json",
            "run",
        ]
        super().__init__(argv, environment(), config.parent)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    init_store(tmp_path / "store", "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    return tmp_path


def test_a_second_daemon_on_one_configuration_is_refused_naming_the_first(site: Path) -> None:
    config = write_config(site, "memoryd.toml")
    say(site, "remember: person Jane Doe: Joined Acme as CTO")
    first = Daemon(config)
    try:
        first.wait_for("heartbeat.finished")
        second = memoryd(config, "run")
        assert second.returncode == EXIT_CONFIG, second.stderr
        assert f"another memoryd daemon (pid {first.process.pid}) already runs" in second.stderr
        assert "Traceback" not in second.stderr
        refused = [json.loads(line) for line in second.stderr.splitlines() if line.startswith("{")]
        assert [r["holder_pid"] for r in refused if r["event"] == "daemon.refused"] == [
            first.process.pid
        ]
        assert first.process.poll() is None  # the first carries on
        assert first.stop()[0] == EXIT_OK
    finally:
        first.kill()
    # Once the first has stopped, a daemon starts again on that configuration.
    again = Daemon(config)
    try:
        again.wait_for("daemon.ready")
        assert again.stop()[0] == EXIT_OK
    finally:
        again.kill()


def test_two_state_folders_on_one_store_share_the_store_lock(site: Path) -> None:
    write_config(site, "a.toml", state="state-a")
    other = write_config(site, "b.toml", state="state-b")
    say(site, "remember: person Jane Doe: Joined Acme as CTO")
    lock = store_lock_path(site / "store")
    assert lock == (site / "store" / ".git" / "memoryd.lock")
    # A writer through the other state folder holds the store while this heartbeat runs:
    # its own state folder's lock is free, the store's is not.
    with held_lock(lock):
        refused = memoryd(other, "heartbeat")
    assert refused.returncode == EXIT_TEMPFAIL, refused.stderr
    assert f"is held by pid {os.getpid()}" in refused.stderr
    assert str(lock) in refused.stderr
    assert "Jane" not in "".join(p.name for p in (site / "store").rglob("*"))
    filed = memoryd(other, "heartbeat")
    assert filed.returncode == EXIT_OK, filed.stderr
    assert (site / "store" / "life").exists()
    assert (
        "jane-doe"
        in subprocess.run(
            ["git", "-C", str(site / "store"), "ls-files"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


def test_a_daemon_skips_its_job_while_another_state_folder_writes(site: Path) -> None:
    config = write_config(site, "memoryd.toml")
    lock = store_lock_path(site / "store")
    assert lock is not None
    with held_lock(lock):
        daemon = Daemon(config)
        try:
            skipped = daemon.wait_for("heartbeat.skipped")
            assert skipped["holder_pid"] == os.getpid()
            assert daemon.process.poll() is None
            assert daemon.stop()[0] == EXIT_OK
        finally:
            daemon.kill()


@pytest.mark.parametrize("command", ["run", "heartbeat", "check"])
def test_before_init_run_heartbeat_and_check_exit_78_with_the_fix(
    tmp_path: Path, command: str
) -> None:
    config = write_config(tmp_path, "memoryd.toml")
    done = memoryd(config, command)
    # `check` too: a unit's `ExecStartPre=memoryd check` keeps a never-initialized daemon down.
    assert done.returncode == EXIT_CONFIG, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "is not a memoryd store yet; run `memoryd init`" in output
    assert "Traceback" not in output
    assert not (tmp_path / "store").exists()  # nothing was made or half-made
