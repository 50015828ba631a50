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

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.harness import Workspace, turn
from tests.support.killing import (
    command_line,
    environment,
    finish,
    git_wrapper,
    held_after,
    model,
    normalized_tree,
    point_at,
    run,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.slow

DAYS = [
    ("2026-03-01", "remember: person Jane Doe: Works at Initech"),
    ("2026-03-02", "remember: company Acme: Signed the renewal"),
    ("2026-03-03", "remember: person Jane Doe: Works at Acme replaces jane-doe-001"),
]


@pytest.fixture
def wrapper(tmp_path: Path) -> Path:
    return git_wrapper(tmp_path / "bin")


def prepare(root: Path, base_url: str, *, shared: bool = False) -> tuple[Workspace, Path]:
    workspace = Workspace(root)
    workspace.init()
    workspace.write_log("a.jsonl", [turn("user", text, f"{day}T10:00:00Z") for day, text in DAYS])
    # One call at a time: the kill points and the paid-call counts below are about the journal's
    # order of events (calls in flight at once are tested in test_concurrency.py).
    # `shared`: the three days' chunks share one call (`llm.sections_per_call`).
    sections = f"sections_per_call = {10 if shared else 1}"
    return workspace, write_config(workspace, base_url, "concurrency = 1", sections)


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[dict[str, str]]:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path / "reference", server.base_url)
        assert finish(run(config, None, None, workspace.root)) == 0
        yield normalized_tree(workspace)


@pytest.mark.parametrize("kill_at", ["before-add", "after-commit"])
def test_killed_around_the_commit_then_finished(
    tmp_path: Path, wrapper: Path, reference: dict[str, str], kill_at: str
) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path / "crash", server.base_url)
        assert finish(run(config, wrapper, kill_at, workspace.root)) == -signal.SIGKILL
        paid = len(server.message_requests)
        assert paid == len(DAYS)
        assert finish(run(config, None, None, workspace.root)) == 0
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
        assert finish(run(config, wrapper, kill_at, workspace.root)) == -signal.SIGKILL
        assert len(server.message_requests) == 1  # the three days in one call
        assert finish(run(config, None, None, workspace.root)) == 0
        # Every day's answer was journalled before the kill: nothing is asked again.
        assert len(server.message_requests) == 1
    # Each day filed once, on its own day, as with one call per day.
    assert normalized_tree(workspace) == reference
    assert workspace.git("status", "--porcelain") == ""


@pytest.mark.parametrize("answered_before_kill", [0, 1])
def test_killed_while_a_request_is_in_flight_then_finished(
    tmp_path: Path, reference: dict[str, str], answered_before_kill: int
) -> None:
    seen, handler = held_after(answered_before_kill, delay=30)
    with FakeAnthropicServer(handler=handler) as server:
        workspace, config = prepare(tmp_path / "crash", server.base_url)
        process = run(config, None, None, workspace.root)
        wait_for(lambda: seen[0] > answered_before_kill)
        process.kill()
        assert finish(process) == -signal.SIGKILL
        before = len(server.message_requests)
    with FakeAnthropicServer(handler=model) as server:
        point_at(config, server.base_url)
        assert finish(run(config, None, None, workspace.root)) == 0
        # Only the chunks without a recorded answer are asked again.
        assert len(server.message_requests) == len(DAYS) - answered_before_kill
        assert before == answered_before_kill + 1
    assert normalized_tree(workspace) == reference


def rewrite(config: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command_line(config, "rewrite"),
        env=environment(root),
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
        assert finish(run(config, wrapper, "before-add", workspace.root)) == -signal.SIGKILL
        assert workspace.git("status", "--porcelain")  # half-done writes on disk
        done = rewrite(config, workspace.root)
        assert done.returncode in (0, 1), done.stderr
        subjects = workspace.commits()
        assert not any("outside memoryd" in subject for subject in subjects), subjects
        assert not (workspace.store / "life/areas/people/jane-doe").exists()
        assert finish(run(config, None, None, workspace.root)) == 0
    facts = {p: t for p, t in normalized_tree(workspace).items() if p.endswith("items.json")}
    assert facts == {p: t for p, t in reference.items() if p.endswith("items.json")}
