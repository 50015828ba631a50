"""A rewrite killed (SIGKILL) after some answers were received does not pay for them again.

The first rewrite runs in a subprocess (this module run as a script: the same workspace, clock
and real SDK as `tests.integration.test_rewrite`) against the fake Anthropic server, which
answers the first K summary requests at once and holds the next one; the test kills the
subprocess as soon as that request arrives, so K answers were received and paid for. The next
rewrite, in process, asks only for the N - K others, and leaves the store exactly as one
uninterrupted rewrite does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace
from tests.support.rewrite import Planted, plant
from tests.support.rewrite_run import run, summarizer

from memoryd.jobs.environment import open_state

pytestmark = pytest.mark.slow

PEOPLE = ["Ann Lee", "Bob Stone", "Cleo Park", "Dan Moss", "Eve Hart"]
ANSWERED_BEFORE_KILL = 2


def prepare(root: Path) -> Workspace:
    workspace = Workspace(root)
    workspace.init()
    plant(
        workspace.store,
        [Planted(name, f"{name} joined Acme", age=1) for name in PEOPLE]
        + [Planted(name, f"{name} lives in Lisbon", age=15) for name in PEOPLE],
        today=workspace.now.date(),
    )
    return workspace


def holding_after(answered: int) -> Callable[[RecordedRequest], ToolUse]:
    """The summarizer, holding every answer after the first `answered` for a minute."""
    seen = [0]

    def handler(request: RecordedRequest) -> ToolUse:
        seen[0] += 1
        answer = summarizer(request)
        return answer if seen[0] <= answered else ToolUse(answer.input, delay_seconds=60)

    return handler


def start_rewrite(root: Path, base_url: str) -> subprocess.Popen[str]:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.test_rewrite_killed", str(root), base_url],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition: Callable[[], bool], deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, "timed out waiting for the subprocess"
        time.sleep(0.02)


def test_a_killed_rewrite_reuses_the_answers_it_had_received(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=summarizer) as server:
        reference = prepare(tmp_path / "reference")
        report = run(reference, reference.settings(), server.base_url)
        asked = len(server.message_requests)
    assert asked == len(PEOPLE) and report.reused == 0

    workspace = prepare(tmp_path / "killed")
    with FakeAnthropicServer(handler=holding_after(ANSWERED_BEFORE_KILL)) as server:
        process = start_rewrite(workspace.root, server.base_url)
        try:
            wait_for(lambda: len(server.message_requests) == ANSWERED_BEFORE_KILL + 1)
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == -signal.SIGKILL
        killed_requests = len(server.message_requests)
        assert not any(subject.startswith("rewrite:") for subject in workspace.commits())

    with FakeAnthropicServer(handler=summarizer) as server, capture_logs() as logs:
        again = run(workspace, workspace.settings(), server.base_url)
        rerun_requests = len(server.message_requests)

    # The K answers received were journalled: only the N - K others are asked again.
    assert killed_requests == ANSWERED_BEFORE_KILL + 1
    assert rerun_requests == len(PEOPLE) - ANSWERED_BEFORE_KILL
    assert (again.reused, again.llm_calls, again.summaries) == (
        ANSWERED_BEFORE_KILL,
        len(PEOPLE) - ANSWERED_BEFORE_KILL,
        len(PEOPLE),
    )
    finished = next(entry for entry in logs if entry["event"] == "rewrite.finished")
    assert finished["reused"] == ANSWERED_BEFORE_KILL
    assert workspace.memories() == reference.memories()
    assert workspace.git("status", "--porcelain") == ""
    with open_state(workspace.settings(), workspace.environment()) as state:
        assert state.rewrites.journalled_answers() == {}  # dropped once committed


def test_a_journalled_answer_to_a_changed_input_is_asked_anew(tmp_path: Path) -> None:
    workspace = prepare(tmp_path / "changed")
    with FakeAnthropicServer(handler=holding_after(ANSWERED_BEFORE_KILL)) as server:
        process = start_rewrite(workspace.root, server.base_url)
        try:
            wait_for(lambda: len(server.message_requests) == ANSWERED_BEFORE_KILL + 1)
        finally:
            process.kill()
            process.communicate(timeout=30)
        first_asked = [
            request.body["messages"][0]["content"] for request in server.message_requests
        ]
    changed = next(name for name in PEOPLE if name in first_asked[0])
    plant(
        workspace.store,
        [Planted(changed, f"{changed} moved to Porto", age=0)],
        today=workspace.now.date(),
    )

    with FakeAnthropicServer(handler=summarizer) as server:
        again = run(workspace, workspace.settings(), server.base_url)
        asked_again = [
            request.body["messages"][0]["content"] for request in server.message_requests
        ]
    assert again.reused == ANSWERED_BEFORE_KILL - 1
    assert len(asked_again) == len(PEOPLE) - ANSWERED_BEFORE_KILL + 1
    assert any(f"{changed} moved to Porto" in text for text in asked_again)
    assert f"{changed} moved to Porto" in workspace.read(
        f"life/areas/people/{changed.lower().replace(' ', '-')}/summary.md"
    )
    with open_state(workspace.settings(), workspace.environment()) as state:
        assert state.rewrites.journalled_answers() == {}


def main(argv: list[str]) -> int:
    """Run one rewrite over the workspace at argv[0] against the fake server at argv[1]."""
    root, base_url = Path(argv[0]), argv[1]
    workspace = Workspace(root)
    run(workspace, workspace.settings(), base_url)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
