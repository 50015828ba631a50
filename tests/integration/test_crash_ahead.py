"""A heartbeat with calls in flight (`llm.concurrency` 4), SIGKILLed at several depths, pays
again only for the calls in flight at that instant: every answer that had arrived was journalled
on arrival (with what it was asked with) and the next heartbeat files it without asking again.

`memoryd heartbeat` runs as a real subprocess against the fake Anthropic server. The first
`answered` requests are answered at once, every later one is held (as a slow model would), so at
the kill exactly `answered` answers have arrived and the rest are in flight. The test waits until
the state database holds the `answered` answers, then kills memoryd.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.harness import Workspace, turn
from tests.support.killing import (
    finish,
    held_after,
    model,
    normalized_tree,
    point_at,
    start,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.slow

CHUNKS = 8


def prepare(root: Path, base_url: str) -> tuple[Workspace, Path]:
    workspace = Workspace(root)
    workspace.init()
    rows = [
        turn(
            "user",
            f"remember: company Customer {day}: Signed in March",
            f"2026-03-0{day}T10:00:00Z",
        )
        for day in range(1, CHUNKS + 1)
    ]
    workspace.write_log("a.jsonl", rows)
    return workspace, write_config(workspace, base_url, "concurrency = 4")


def journalled(root: Path) -> int:
    """How many answers the state database holds (0 before it exists)."""
    path = root / "state" / "state.db"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            row = db.execute("SELECT count(*) FROM chunks WHERE answer_json IS NOT NULL")
            return int(row.fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not created yet, or busy


@pytest.mark.parametrize("answered", [1, 2, 3, 4, 6])
def test_a_kill_pays_again_only_for_the_calls_in_flight(tmp_path: Path, answered: int) -> None:
    with FakeAnthropicServer(handler=model) as server:
        reference, config = prepare(tmp_path / "reference", server.base_url)
        assert finish(start(config, reference.root)) == 0
    seen, handler = held_after(answered, delay=60)
    with FakeAnthropicServer(handler=handler) as server:
        workspace, config = prepare(tmp_path / "crash", server.base_url)
        process = start(config, workspace.root)
        wait_for(lambda: journalled(workspace.root) >= answered and seen[0] > answered)
        process.kill()
        assert finish(process) == -signal.SIGKILL
        in_flight = len(server.message_requests) - answered
        assert in_flight >= 1
    with FakeAnthropicServer(handler=model) as server:
        point_at(config, server.base_url)
        assert finish(start(config, workspace.root)) == 0
        # Every answer that had arrived is filed from the journal: only the calls that were in
        # flight (and the chunks not sent yet) are asked: paid again = the calls in flight.
        assert len(server.message_requests) == CHUNKS - answered
    assert normalized_tree(workspace) == normalized_tree(reference)
