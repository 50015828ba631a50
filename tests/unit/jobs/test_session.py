"""The one writing session: every writer pushes and indexes through it, with the back-off, and
refreshes the search index after a commit."""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

import memoryd
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.jobs.environment import Environment
from memoryd.jobs.index_state import BACKOFF_FILE
from memoryd.jobs.review import decide_item
from memoryd.jobs.session import writing_session
from memoryd.reading.search import INDEX_FILE_NAME
from memoryd.settings import Settings, parse_settings, state_directory
from memoryd.store.layout import init_store
from memoryd.store.provenance import TipSource
from memoryd.store.review import ReviewItem, hold
from memoryd.worktree import UnitOfWork

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
TIP = ReviewItem(
    kind="tacit",
    agent="ops",
    text="Staging moved to port 6543",
    reasons=("untrusted-source",),
    held="2026-03-02",
    sources=(TipSource("ops", "s1", "/logs/s1.jsonl", (4, 9), "untrusted", "2026-03-01"),),
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    root = tmp_path / "store"
    init_store(root, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    uow = UnitOfWork(GitStore(root, GitIdentity("memoryd", "memoryd@localhost"), None))
    hold(uow, TIP)
    uow.apply_and_commit("heartbeat: held one", {})
    return parse_settings(
        {
            "store": {"path": str(root)},
            "state": {"path": str(tmp_path / "state")},
            "llm": {"provider": "markers"},
            "index": {"commands": ["sh -c 'echo x >> index-runs'"], "timeout_seconds": 5},
        }
    )


def environment() -> Environment:
    return Environment(environ={}, clock=lambda: NOW)


def test_review_accept_refreshes_the_search_index(settings: Settings) -> None:
    index = state_directory(settings, {}) / INDEX_FILE_NAME
    assert not index.exists()

    _, commit, _ = decide_item(settings, environment(), TIP.id, "accept")

    assert commit is not None
    assert index.exists()


def test_review_accept_runs_the_index_commands_with_their_back_off(settings: Settings) -> None:
    state_dir = state_directory(settings, {})
    state_dir.mkdir(parents=True)
    until = (NOW + timedelta(minutes=5)).isoformat()
    (state_dir / BACKOFF_FILE).write_text(json.dumps({"failures": 3, "until": until}))

    with capture_logs() as logs:
        decide_item(settings, environment(), TIP.id, "accept")

    assert [e["until"] for e in logs if e["event"] == "index.backoff"] == [until]
    assert not (settings.store.path / "index-runs").exists()


def test_a_session_without_a_commit_refreshes_nothing_and_runs_no_index(
    settings: Settings,
) -> None:
    with writing_session(settings, environment()) as session:
        session.record_commit(None)

    assert session.sync_problem is None
    assert not (state_directory(settings, {}) / INDEX_FILE_NAME).exists()
    assert not (settings.store.path / "index-runs").exists()


def _calls_of(name: str) -> list[str]:
    """The modules of the memoryd package that call a function named `name`."""
    package = Path(memoryd.__file__).parent
    callers = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = node.func
                called_name = called.attr if isinstance(called, ast.Attribute) else None
                if isinstance(called, ast.Name):
                    called_name = called.id
                if called_name == name:
                    callers.append(path.relative_to(package).as_posix())
    return callers


def test_every_push_and_index_goes_through_the_writing_session() -> None:
    # The session is the one caller, and it always passes the back-off's state and time.
    assert _calls_of("after_commit") == ["jobs/session.py"]
    assert _calls_of("before_writing") == ["jobs/session.py"]
    assert _calls_of("pull_after_recovery") == ["jobs/session.py"]
    assert _calls_of("refresh_search_after_commit") == ["jobs/session.py"]
