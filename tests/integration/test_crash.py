"""A heartbeat killed with SIGKILL at any point is finished by the next one.

`memoryd heartbeat` runs as a real subprocess against the fake Anthropic server. To kill it at
exact points, the test puts a wrapper named `git` first on its PATH: the wrapper runs the real
git and, when told to, kills its parent (memoryd) just before `git add` (the files of the commit
are written but not committed: mid-apply) or just after `git commit` (committed, bookkeeping not
done). A kill while a request is in flight, or after an earlier chunk's answer was recorded,
needs no wrapper: the fake server holds the answer and the test kills memoryd meanwhile.

Whatever the point, a final uninterrupted heartbeat must leave the store exactly as one
uninterrupted run does, and no chunk's answer is paid for twice.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

pytestmark = pytest.mark.slow

REAL_GIT = shutil.which("git")
WRAPPER = """#!/bin/sh
# Test wrapper: run the real git; kill memoryd (our parent) at the point named in $KILL_AT,
# once (the marker file is consumed). Paths are staged by `git update-index` (files) or `git add`
# (folders); a commit is made by `git commit`, or by `update-ref` moving the branch to a commit
# built by `commit-tree` (only memoryd's paths staged).
if [ -n "$KILL_MARKER" ] && [ -e "$KILL_MARKER" ]; then
  for arg in "$@"; do
    if [ "$KILL_AT" = "before-add" ] && [ "$arg" = "add" -o "$arg" = "update-index" ]; then
      rm -f "$KILL_MARKER"; kill -9 "$PPID"; exit 1
    fi
    if [ "$KILL_AT" = "after-commit" ] && [ "$arg" = "commit" -o "$arg" = "update-ref" ]; then
      "$REAL_GIT" "$@"; status=$?
      rm -f "$KILL_MARKER"; kill -9 "$PPID"; exit $status
    fi
  done
fi
exec "$REAL_GIT" "$@"
"""

DAYS = [
    ("2026-03-01", "remember: person Jane Doe: Works at Initech"),
    ("2026-03-02", "remember: company Acme: Signed the renewal"),
    ("2026-03-03", "remember: person Jane Doe: Works at Acme replaces jane-doe-001"),
]


def model(request: RecordedRequest) -> ToolUse:
    from tests.support.marker_model import marker_model

    return marker_model(request)


def slow_model(delay: float, after: int) -> tuple[list[int], object]:
    """A handler that answers the first `after` requests at once and then holds answers."""
    seen = [0]

    def handler(request: RecordedRequest) -> ToolUse:
        seen[0] += 1
        answer = model(request)
        if seen[0] > after:
            return ToolUse(answer.input, delay_seconds=delay)
        return answer

    return seen, handler


@pytest.fixture
def wrapper(tmp_path: Path) -> Path:
    assert REAL_GIT is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "git"
    script.write_text(WRAPPER, encoding="utf-8")
    script.chmod(0o755)
    return folder


def prepare(root: Path, base_url: str, *, shared: bool = False) -> tuple[Workspace, Path]:
    workspace = Workspace(root)
    workspace.init()
    workspace.write_log("a.jsonl", [turn("user", text, f"{day}T10:00:00Z") for day, text in DAYS])
    config = root / "memoryd.toml"
    # One call at a time: the kill points and the paid-call counts below are about the journal's
    # order of events (calls in flight at once are tested in test_concurrency.py).
    # `shared`: the three days' chunks share one call (`llm.sections_per_call`).
    llm = anthropic_llm(base_url, "concurrency = 1", f"sections_per_call = {10 if shared else 1}")
    text = ops_config(llm=llm, store=workspace.store, state=root / "state", logs=workspace.logs)
    config.write_text(text, encoding="utf-8")
    return workspace, config


def start(
    config: Path, wrapper: Path | None, kill_at: str | None, root: Path
) -> subprocess.Popen[str]:
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    if wrapper is not None and kill_at is not None:
        marker = root / "kill-marker"
        marker.write_text("", encoding="utf-8")
        environ.update(
            {
                "PATH": f"{wrapper}{os.pathsep}{os.environ['PATH']}",
                "REAL_GIT": str(REAL_GIT),
                "KILL_AT": kill_at,
                "KILL_MARKER": str(marker),
            }
        )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memoryd",
            "--config",
            str(config),
            "--log-format",
            "json",
            "heartbeat",
        ],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> int:
    try:
        process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode


def wait_for(condition: object, deadline: float = 30.0) -> None:
    assert callable(condition)
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, "timed out waiting for the subprocess"
        time.sleep(0.02)


def normalized_tree(workspace: Workspace) -> dict[str, str]:
    return {
        path: text.replace(str(workspace.root), "WS") for path, text in workspace.memories().items()
    }


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[dict[str, str]]:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path / "reference", server.base_url)
        assert finish(start(config, None, None, workspace.root)) == 0
        yield normalized_tree(workspace)


@pytest.mark.parametrize("kill_at", ["before-add", "after-commit"])
def test_killed_around_the_commit_then_finished(
    tmp_path: Path, wrapper: Path, reference: dict[str, str], kill_at: str
) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path / "crash", server.base_url)
        assert finish(start(config, wrapper, kill_at, workspace.root)) == -signal.SIGKILL
        paid = len(server.message_requests)
        assert paid == len(DAYS)
        assert finish(start(config, None, None, workspace.root)) == 0
        # The answers were journalled before the kill: nothing is asked again.
        assert len(server.message_requests) == paid
    assert normalized_tree(workspace) == reference
    assert workspace.git("status", "--porcelain") == ""


@pytest.mark.parametrize("kill_at", ["before-add", "after-commit"])
def test_a_shared_call_of_several_days_killed_around_the_commit_then_finished(
    tmp_path: Path, wrapper: Path, reference: dict[str, str], kill_at: str
) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path / "crash", server.base_url, shared=True)
        assert finish(start(config, wrapper, kill_at, workspace.root)) == -signal.SIGKILL
        assert len(server.message_requests) == 1  # the three days in one call
        assert finish(start(config, None, None, workspace.root)) == 0
        # Every day's answer was journalled before the kill: nothing is asked again.
        assert len(server.message_requests) == 1
    # Each day filed once, on its own day, as with one call per day.
    assert normalized_tree(workspace) == reference
    assert workspace.git("status", "--porcelain") == ""


@pytest.mark.parametrize("answered_before_kill", [0, 1])
def test_killed_while_a_request_is_in_flight_then_finished(
    tmp_path: Path, reference: dict[str, str], answered_before_kill: int
) -> None:
    seen, handler = slow_model(delay=30, after=answered_before_kill)
    with FakeAnthropicServer(handler=handler) as server:  # type: ignore[arg-type]
        workspace, config = prepare(tmp_path / "crash", server.base_url)
        process = start(config, None, None, workspace.root)
        wait_for(lambda: seen[0] > answered_before_kill)
        process.kill()
        assert finish(process) == -signal.SIGKILL
        before = len(server.message_requests)
    with FakeAnthropicServer(handler=model) as server:
        text = config.read_text(encoding="utf-8")
        config.write_text(re.sub(r'base_url = ".*"', f'base_url = "{server.base_url}"', text))
        assert finish(start(config, None, None, workspace.root)) == 0
        # Only the chunks without a recorded answer are asked again.
        assert len(server.message_requests) == len(DAYS) - answered_before_kill
        assert before == answered_before_kill + 1
    assert normalized_tree(workspace) == reference


def rewrite(config: Path, root: Path) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "memoryd",
            "--config",
            str(config),
            "--log-format",
            "json",
            "rewrite",
        ],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_rewrite_after_a_killed_heartbeat_never_commits_its_half_done_writes(
    tmp_path: Path, wrapper: Path, reference: dict[str, str]
) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path / "crash", server.base_url)
        assert finish(start(config, wrapper, "before-add", workspace.root)) == -signal.SIGKILL
        assert workspace.git("status", "--porcelain")  # half-done writes on disk
        done = rewrite(config, workspace.root)
        assert done.returncode in (0, 1), done.stderr
        subjects = workspace.commits()
        assert not any("outside memoryd" in subject for subject in subjects), subjects
        assert not (workspace.store / "life/areas/people/jane-doe").exists()
        assert finish(start(config, None, None, workspace.root)) == 0
    facts = {p: t for p, t in normalized_tree(workspace).items() if p.endswith("items.json")}
    assert facts == {p: t for p, t in reference.items() if p.endswith("items.json")}
