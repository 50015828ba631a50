"""`memoryd run` as systemd runs it: a real subprocess, a notify socket, signals, the fake API.

The daemon talks to the fake Anthropic server (in this process, on a local port) through the real
SDK. Synchronization waits on observable things with deadlines: log lines on the daemon's stderr,
datagrams on the notify socket, requests recorded by the fake server, the process's exit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import FakeAnthropicServer, FakeUsage, RecordedRequest, ToolUse
from tests.support.daemon_process import DaemonProcess
from tests.support.harness import STABLE_EVENTS

from memoryd.daemon.notify import Notifier
from memoryd.errors import EXIT_TEMPFAIL
from memoryd.state.facade import DATABASE_FILE_NAME, State
from memoryd.store.layout import init_store

REPO_ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-ant-test-daemon-0000000000"
_REMEMBER = re.compile(r"^remember: (\w+) ([^:]+): (.+)$", re.MULTILINE)


def remember_model(request: RecordedRequest) -> ToolUse:
    """Files each `remember:` line of the transcript as a significant fact."""
    content = request.body["messages"][0]["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    facts = []
    entities = []
    for kind, name, fact in _REMEMBER.findall(text):
        facts.append({"entity": {"name": name, "kind": kind}, "fact": fact, "category": "status"})
        entities.append({"name": name, "kind": kind, "significant": True})
    return ToolUse({"facts": facts, "entities": entities})


class Site:
    """A store, a state folder, transcripts and a configuration file for one daemon."""

    def __init__(self, root: Path, base_url: str) -> None:
        self.root = root
        self.base_url = base_url
        self.store = root / "store"
        self.logs = root / "logs"
        self.state = root / "state"
        self.config = root / "memoryd.toml"
        self.logs.mkdir(parents=True)
        init_store(self.store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
        # A recent rewrite, so the daemon does not start one after its first heartbeat.
        with State.open(self._database()) as state:
            state.rewrites.set_last_success(datetime.now(UTC))
        self.write_config()

    def _database(self) -> Path:
        self.state.mkdir(parents=True, exist_ok=True)
        return self.state / DATABASE_FILE_NAME

    def write_config(self, heartbeat_minutes: int = 30, extra: str = "") -> None:
        text = ops_config(
            llm=anthropic_llm(self.base_url, "timeout_seconds = 60"),
            store=self.store,
            state=self.state,
            logs=self.logs,
            extra=f"[schedule]\nheartbeat_minutes = {heartbeat_minutes}\n{extra}",
        )
        self.config.write_text(text, encoding="utf-8")

    def say(self, name: str, text: str, when: str = "2026-03-01T09:00:00Z") -> None:
        """Append one user line to transcript `name`."""
        with (self.logs / name).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"role": "user", "content": text, "timestamp": when}) + "\n")

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.store), *args], check=True, capture_output=True, text=True
        ).stdout

    def environment(self, **extra: str) -> dict[str, str]:
        keep = ("PATH", "HOME", "LANG", "TMPDIR")
        env = {key: os.environ[key] for key in keep if key in os.environ}
        return {**env, "ANTHROPIC_API_KEY": API_KEY, "PYTHONPATH": str(REPO_ROOT), **extra}

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "memoryd", "--config", str(self.config), *args]


class Daemon(DaemonProcess):
    """`memoryd run` on the test's site."""

    def __init__(self, site: Site, **environment: str) -> None:
        super().__init__(
            site.command("--log-format", "json", "run"), site.environment(**environment), site.root
        )


class NotifySocket:
    """What systemd listens on: a datagram socket named by $NOTIFY_SOCKET."""

    def __init__(self) -> None:
        # AF_UNIX paths are limited to ~108 bytes: pytest's tmp_path may be longer.
        self.directory = tempfile.mkdtemp(prefix="mdn-", dir="/tmp")
        self.path = os.path.join(self.directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.received: list[str] = []

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        for message in self.received:
            if predicate(message):
                return message
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no such notification in {self.received}")
            self.sock.settimeout(remaining)
            message = self.sock.recv(4096).decode("utf-8")
            self.received.append(message)
            if predicate(message):
                return message

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(handler=remember_model, api_key=API_KEY) as fake:
        yield fake


@pytest.fixture
def site(tmp_path: Path, server: FakeAnthropicServer) -> Site:
    return Site(tmp_path, server.base_url)


@pytest.fixture
def notify() -> Iterator[NotifySocket]:
    sock = NotifySocket()
    yield sock
    sock.close()


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for daemon in started:
        daemon.kill()


def wait_until(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        threading.Event().wait(0.05)  # polling an observable with a deadline, not a fixed sleep


def assert_json_log(daemon: Daemon) -> None:
    for line in daemon.lines:
        record = json.loads(line)  # every line is one JSON object
        assert {"event", "level", "timestamp"} <= set(record), line
        assert record["timestamp"].endswith("Z") or record["timestamp"].endswith("+00:00")


def test_ready_first_then_the_startup_heartbeat_commits_then_sigterm_exits_0(
    site: Site, notify: NotifySocket, daemons: list[Daemon]
) -> None:
    site.say("a.jsonl", "remember: person Jane Doe: Joined Acme as CTO")
    daemon = Daemon(site, NOTIFY_SOCKET=notify.path, WATCHDOG_USEC="2000000")
    daemons.append(daemon)

    assert notify.wait_for(lambda m: "READY=1" in m).startswith("READY=1")
    finished = daemon.wait_for("heartbeat.finished")
    assert finished["outcome"] == "ok"
    assert finished["facts_added"] == 1
    assert finished["job"] == "heartbeat"
    assert finished["run_id"] == daemon.wait_for("heartbeat.started")["run_id"]
    assert site.git("log", "-1", "--format=%H").strip() == finished["commit"]
    assert (
        "Joined Acme as CTO" in (site.store / "life/areas/people/jane-doe/items.json").read_text()
    )

    shown = subprocess.run(
        site.command("status", "--json"),
        env=site.environment(),
        cwd=site.root,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert json.loads(shown.stdout)["last_heartbeat"]["commit"] == finished["commit"]

    status = notify.wait_for(lambda m: m.startswith("STATUS=last heartbeat"))
    assert "+1 fact, 1 entity;" in status
    assert finished["commit"][:12] in status
    notify.wait_for(lambda m: m == "WATCHDOG=1")

    code, elapsed = daemon.stop()
    assert code == 0
    assert elapsed < 10
    notify.wait_for(lambda m: m == "STOPPING=1", timeout=1)
    events = [e["event"] for e in daemon.events()]
    assert events.index("daemon.ready") < events.index("heartbeat.started")
    assert events[-1] == "daemon.stopped"
    assert_json_log(daemon)
    assert STABLE_EVENTS & set(events) == {"heartbeat.started", "heartbeat.finished"}


def test_sigterm_during_a_slow_llm_call_exits_0_at_once_and_the_next_start_finishes(
    site: Site, server: FakeAnthropicServer, daemons: list[Daemon]
) -> None:
    site.say("a.jsonl", "remember: person Jane Doe: Joined Acme as CTO")
    server.enqueue(ToolUse({"facts": []}, delay_seconds=60))
    head = site.git("rev-parse", "HEAD").strip()
    daemon = Daemon(site)
    daemons.append(daemon)
    wait_until(lambda: len(server.message_requests) == 1)

    code, elapsed = daemon.stop()
    assert code == 0
    assert elapsed < 10  # not the 60 s the call would take, nor the client's timeout
    stopped = daemon.events()[-1]
    assert stopped["event"] == "daemon.stopped"
    assert stopped["abandoned_job"] == "heartbeat"
    assert stopped["in_llm_call"] is True
    # Nothing half-written: no new commit, a clean work tree, no temporary files.
    assert site.git("rev-parse", "HEAD").strip() == head
    assert site.git("status", "--porcelain", "--untracked-files=all") == ""
    assert not [p for p in site.store.rglob("*.tmp")]
    assert_json_log(daemon)

    again = Daemon(site)
    daemons.append(again)
    finished = again.wait_for("heartbeat.finished")
    assert finished["outcome"] == "ok"
    assert finished["facts_added"] == 1
    assert len(server.message_requests) == 2
    assert again.stop()[0] == 0


def test_sigterm_between_chunks_commits_what_is_done_and_the_next_start_does_the_rest(
    site: Site, server: FakeAnthropicServer, daemons: list[Daemon]
) -> None:
    site.say("a.jsonl", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z")
    site.say("b.jsonl", "remember: person Bob Roe: Moved to Lisbon", "2026-03-02T09:00:00Z")
    # The first answer takes a moment, well within the stop grace: the heartbeat gets it, then
    # stops at the safe point before asking about the second chunk.
    first = remember_model(
        RecordedRequest("POST", "/v1/messages", {}, _request_saying("Jane Doe", "Joined Acme"))
    )
    server.enqueue(ToolUse(first.input, delay_seconds=1.0))
    daemon = Daemon(site)
    daemons.append(daemon)
    wait_until(lambda: len(server.message_requests) == 1)

    code, _elapsed = daemon.stop()
    assert code == 0
    finished = daemon.wait_for("heartbeat.finished", timeout=1)
    assert (finished["outcome"], finished["stop_reason"]) == ("stopped", "shutdown requested")
    assert finished["facts_added"] == 1
    assert daemon.events()[-1]["abandoned_job"] is None
    assert site.git("log", "-1", "--format=%H").strip() == finished["commit"]
    assert len(server.message_requests) == 1

    again = Daemon(site)
    daemons.append(again)
    rest = again.wait_for("heartbeat.finished")
    assert (rest["outcome"], rest["facts_added"]) == ("ok", 1)
    assert len(server.message_requests) == 2
    assert (site.store / "life/areas/people/bob-roe/items.json").exists()
    assert again.stop()[0] == 0


def _request_saying(name: str, fact: str) -> dict[str, Any]:
    text = f"remember: person {name}: {fact}"
    return {"messages": [{"role": "user", "content": text}]}


def test_sighup_reloads_a_valid_configuration_and_keeps_the_old_one_otherwise(
    site: Site, daemons: list[Daemon]
) -> None:
    daemon = Daemon(site)
    daemons.append(daemon)
    daemon.wait_for("heartbeat.finished")

    site.write_config(heartbeat_minutes=45)
    daemon.process.send_signal(signal.SIGHUP)
    assert daemon.wait_for("config.reloaded")["path"] == str(site.config)

    site.config.write_text("[store\nthis is not TOML", encoding="utf-8")
    daemon.process.send_signal(signal.SIGHUP)
    failed = daemon.wait_for("config.reload_failed")
    assert "not valid TOML" in failed["problems"][0]

    site.write_config(extra='[git]\nunknown_key = "x"')
    daemon.process.send_signal(signal.SIGHUP)
    failed = daemon.wait_for("config.reload_failed", count=2)
    assert failed["problems"] == ["At 'git.unknown_key': unknown key"]

    assert daemon.process.poll() is None  # still running on the old configuration
    code, _elapsed = daemon.stop()
    assert code == 0
    assert_json_log(daemon)


def status_of(site: Site) -> tuple[int, dict[str, Any]]:
    """`memoryd status --json` as the operator runs it beside the daemon: its code and report."""
    result = subprocess.run(
        site.command("status", "--json"),
        env=site.environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result.returncode, json.loads(result.stdout)


def test_after_a_reload_status_predicts_the_daemons_own_next_heartbeat(
    site: Site, daemons: list[Daemon]
) -> None:
    daemon = Daemon(site)
    daemons.append(daemon)
    ready = daemon.wait_for("daemon.ready")
    daemon.wait_for("heartbeat.finished")
    code, report = status_of(site)
    assert code == 0
    assert report["next_runs"]["heartbeat"] == ready["next_heartbeat"]

    site.write_config(heartbeat_minutes=5)
    daemon.process.send_signal(signal.SIGHUP)
    reloaded = daemon.wait_for("config.reloaded")
    code, report = status_of(site)
    assert code == 0
    assert report["next_runs"]["heartbeat"] == reloaded["next_heartbeat"]
    # The new interval counts from the reload, not from the last heartbeat's start.
    started = datetime.fromisoformat(report["last_heartbeat"]["started_at"])
    assert datetime.fromisoformat(reloaded["next_heartbeat"]) - started > timedelta(minutes=5)
    code, _elapsed = daemon.stop()
    assert code == 0
    # A stopped daemon's record is not believed: the file and the last run decide again.
    _code, report = status_of(site)
    expected = started + timedelta(minutes=5)
    assert report["next_runs"]["heartbeat"] == expected.astimezone(UTC).isoformat()


def test_a_failed_reload_stands_in_status_line_and_status_until_a_reload_succeeds(
    site: Site, notify: NotifySocket, daemons: list[Daemon]
) -> None:
    daemon = Daemon(site, NOTIFY_SOCKET=notify.path)
    daemons.append(daemon)
    daemon.wait_for("heartbeat.finished")
    heartbeat_line = notify.wait_for(lambda m: m.startswith("STATUS=last heartbeat"))

    site.write_config(extra='[git]\nunknown_key = "x"')
    daemon.process.send_signal(signal.SIGHUP)
    problem = daemon.wait_for("config.reload_failed")["problems"][0]
    line = notify.wait_for(lambda m: m.startswith("STATUS=RELOAD FAILED"))
    assert line == (
        f"STATUS=RELOAD FAILED ({site.config}): {problem}; running on the old configuration; "
        + heartbeat_line.removeprefix("STATUS=")
    )
    # The file is fixed but not reloaded yet: status, which reads the fixed file, still says
    # the daemon runs on the old configuration.
    site.write_config()
    code, report = status_of(site)
    assert code == 78
    assert report["reload_failed"]["problems"] == [problem]
    assert report["reload_failed"]["path"] == str(site.config)

    daemon.process.send_signal(signal.SIGHUP)
    daemon.wait_for("config.reloaded")
    cleared = notify.wait_for(lambda m: m.startswith("STATUS=last heartbeat"), timeout=30)
    assert "RELOAD FAILED" not in cleared
    code, report = status_of(site)
    assert (code, report["reload_failed"]) == (0, None)
    code, _elapsed = daemon.stop()
    assert code == 0


def test_a_standing_problem_leads_every_status_line_until_cleared(notify: NotifySocket) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": notify.path})
    notifier.status("last heartbeat ok")
    notifier.set_standing("RELOAD FAILED (x): bad")
    notifier.status("last heartbeat later")
    notifier.set_standing(None)
    received = [notify.sock.recv(4096).decode() for _ in range(4)]
    assert received == [
        "STATUS=last heartbeat ok",
        "STATUS=RELOAD FAILED (x): bad; last heartbeat ok",
        "STATUS=RELOAD FAILED (x): bad; last heartbeat later",
        "STATUS=last heartbeat later",
    ]


def test_a_one_shot_heartbeat_during_a_daemon_job_exits_75_naming_the_daemon(
    site: Site, server: FakeAnthropicServer, daemons: list[Daemon]
) -> None:
    site.say("a.jsonl", "remember: person Jane Doe: Joined Acme as CTO")
    server.enqueue(ToolUse({"facts": []}, delay_seconds=60))
    daemon = Daemon(site)
    daemons.append(daemon)
    wait_until(lambda: len(server.message_requests) == 1)

    one_shot = subprocess.run(
        site.command("--log-format", "json", "heartbeat"),
        env=site.environment(),
        cwd=site.root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert one_shot.returncode == EXIT_TEMPFAIL
    assert f"held by pid {daemon.pid}" in one_shot.stderr
    assert len(server.message_requests) == 1  # the one-shot asked the model nothing
    assert daemon.stop()[0] == 0


def priced_answer(request: RecordedRequest) -> ToolUse:
    """`remember_model`'s answer, costing 0.01 USD at the prices the test configures."""
    return ToolUse(
        remember_model(request).input, usage=FakeUsage(input_tokens=5000, output_tokens=1000)
    )


def test_a_backfill_spread_over_heartbeats_goes_on_at_once_until_done(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    # A ceiling per heartbeat below one call (the first call of a heartbeat always goes): three
    # transcripts take three heartbeats, each started at once after the one before
    # (heartbeat.continuing), not after the 30-minute interval; the last one leaves nothing
    # waiting and no more follow. (With calls in flight, at the default concurrency, the call
    # awaited on its chunk's turn stays reserved: it does not let a second call through.)
    with FakeAnthropicServer(handler=priced_answer, api_key=API_KEY) as server:
        site = Site(tmp_path, server.base_url)
        site.write_config(extra='[llm.prices."claude-haiku-5-5"]\ninput = 1.0\noutput = 5.0')
        config = site.config.read_text(encoding="utf-8")
        site.config.write_text(
            config.replace("daily_usd = 0", "daily_usd = 0\nheartbeat_usd = 0.005"),
            encoding="utf-8",
        )
        for number in range(3):  # on three days: each conversation a call of its own
            said = f"remember: person Person {number}: Moved to City {number}"
            site.say(f"t{number}.jsonl", said, when=f"2026-03-0{number + 1}T09:00:00Z")
        daemon = Daemon(site)
        daemons.append(daemon)
        last = daemon.wait_for("heartbeat.finished", count=3, timeout=60)
        assert (last["more_waiting"], last["facts_added"]) == (False, 1)
        events = daemon.events()
        assert len([e for e in events if e["event"] == "heartbeat.continuing"]) == 2
        assert not [e for e in events if e["event"] == "job.missed"]
        assert len(server.message_requests) == 3
        assert daemon.stop()[0] == 0
    finished = [e for e in daemon.events() if e["event"] == "heartbeat.finished"]
    assert [e["facts_added"] for e in finished] == [1, 1, 1]
