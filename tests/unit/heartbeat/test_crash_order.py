"""A heartbeat that crashes between any two of its crash-safe steps loses nothing and files
nothing twice (`memoryd.heartbeat.processing.process` lists the steps).

Everything is real but the model: the store is a git repository made by `memoryd init`'s code,
the state is the SQLite database, the transcripts are files. The fake extractor reads marker
lines (no HTTP) and reports a usage, so that every paid call leaves a row in the ledger. A crash
is an exception raised at one step; the next heartbeat, run the way the job runs it (state
reconciled with the store, a killed run's intent finished or undone), must end with exactly
the store an uninterrupted heartbeat makes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memoryd.extractors import apply as apply_module
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import (
    ChunkContext,
    Extraction,
    MarkersExtractor,
    RetryCheck,
    retry_allowed,
)
from memoryd.extractors.recovery import HEARTBEAT_INTENT_KEY
from memoryd.heartbeat import HeartbeatReport, committing
from memoryd.jobs.environment import Environment, open_state
from memoryd.jobs.heartbeat import build_heartbeat
from memoryd.jobs.parts import make_scrubber
from memoryd.jobs.reconcile import reconcile_state
from memoryd.llm.prices import Usage
from memoryd.settings import Settings, parse_settings
from memoryd.store.layout import init_store

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
DAYS = [
    ("2026-03-01", "remember: person Jane Doe: Works at Initech"),
    ("2026-03-02", "remember: company Acme: Signed the renewal"),
]
CALL_USAGE = Usage(input_tokens=1000, output_tokens=100)


class Crash(Exception):
    """The process dying at a chosen point: nothing after it runs."""


class CountingExtractor(MarkersExtractor):
    """Marker lines as the model's answers, each call counted and reported as paid; told to,
    it crashes before its first call completes or just after it (the answer lost)."""

    def __init__(self, settings: Settings, crash: str | None = None) -> None:
        super().__init__(make_scrubber(settings))
        self.calls = 0
        self.crash = crash

    def extract(
        self, chunk: Chunk, context: ChunkContext, may_retry: RetryCheck = retry_allowed
    ) -> Extraction:
        if self.crash == "during-call":
            raise Crash(self.crash)
        self.calls += 1
        extraction = super().extract(chunk, context, may_retry)
        if self.crash == "after-call":
            raise Crash(self.crash)
        return Extraction(answer=extraction.answer, usage=CALL_USAGE, model=None)


class Workspace:
    """A store, a state folder and transcripts under one temporary folder, with a fixed clock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = root / "store"
        self.logs = root / "logs"
        self.logs.mkdir(parents=True)
        init_store(self.store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
        lines = [
            json.dumps({"role": "user", "content": text, "timestamp": f"{day}T09:00:00Z"})
            for day, text in DAYS
        ]
        (self.logs / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.settings = parse_settings(
            {
                "store": {"path": str(self.store)},
                "state": {"path": str(root / "state")},
                "llm": {"provider": "markers"},
                "budget": {"daily_usd": 0},
                "backfill": {"since": "all"},
                "agents": [
                    {"name": "ops", "sources": [{"format": "jsonl", "path": str(self.logs)}]}
                ],
            }
        )

    def heartbeat(self, extractor: CountingExtractor) -> HeartbeatReport:
        """One heartbeat as the job runs it: the state reconciled with the store first."""
        env = Environment(environ={}, clock=lambda: NOW)
        with open_state(self.settings, env, discard_corrupt=True) as state:
            beat = build_heartbeat(self.settings, env, state, extractor)
            reconcile_state(state, beat.git, beat.settings.host, env.clock())
            return beat.run()

    def query(self, sql: str, *parameters: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.root / "state" / "state.db") as db:
            return db.execute(sql, parameters).fetchall()

    def chunk_states(self) -> list[str]:
        return [state for (state,) in self.query("SELECT state FROM chunks ORDER BY chunk_key")]

    def paid_calls(self) -> int:
        return len(self.query("SELECT id FROM usage"))

    def intent(self) -> bool:
        return bool(self.query("SELECT value FROM meta WHERE key = ?", HEARTBEAT_INTENT_KEY))

    def commits(self) -> list[str]:
        log = ["git", "-C", str(self.store), "log", "--format=%s"]
        return subprocess.run(log, check=True, capture_output=True, text=True).stdout.splitlines()

    def memories(self) -> dict[str, str]:
        """The store's files outside git and memoryd's own bookkeeping (`.memoryd/`), with the
        workspace's own folder (in the facts' provenance) written as `<root>`."""
        return {
            path.relative_to(self.store).as_posix(): path.read_text(encoding="utf-8").replace(
                str(self.root), "<root>"
            )
            for path in sorted(self.store.rglob("*"))
            if path.is_file() and not {".git", ".memoryd"} & set(path.relative_to(self.store).parts)
        }


@contextmanager
def crashing(monkeypatch: pytest.MonkeyPatch, target: object, name: str) -> Iterator[None]:
    """`target.name` raises Crash instead of running, for the length of the block."""

    def crash(*args: object, **kwargs: object) -> None:
        raise Crash(name)

    with monkeypatch.context() as patch:
        patch.setattr(target, name, crash)
        yield


# Where the first heartbeat crashes, and what must be durable then: the chunks' journal
# states, the calls in the ledger, whether a commit intent is recorded and whether the commit
# was made.
CRASHES = {
    "during-call": (["planned"], 0, False, False),
    "after-call": (["planned"], 0, False, False),
    "before-apply": (["answered"], 1, False, False),
    "before-intent": (["answered", "answered"], 2, False, False),
    "before-commit": (["applied", "applied"], 2, True, False),
    "before-finalize": (["applied", "applied"], 2, True, True),
}
# Calls the next heartbeat makes: only for the answers the crash lost.
CALLS_AGAIN = {"during-call": 2, "after-call": 2, "before-apply": 1}
STEPS: dict[str, tuple[object, str]] = {
    "before-apply": (apply_module, "apply_answer"),
    "before-intent": (committing, "record_intent"),
    "before-commit": (committing, "commit_files"),
    "before-finalize": (committing, "finalize"),
}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    ws = Workspace(tmp_path_factory.mktemp("uninterrupted"))
    extractor = CountingExtractor(ws.settings)
    report = ws.heartbeat(extractor)
    assert (report.outcome, extractor.calls, ws.paid_calls()) == ("ok", 2, 2)
    assert ws.chunk_states() == ["committed", "committed"]
    return ws.memories()


def test_the_uninterrupted_heartbeat_files_each_memory_once(
    uninterrupted: dict[str, str],
) -> None:
    facts = "".join(text for path, text in uninterrupted.items() if path.endswith("items.json"))
    assert facts.count("Works at Initech") == 1
    assert facts.count("Signed the renewal") == 1


@pytest.mark.parametrize("point", list(CRASHES))
def test_a_crash_between_two_steps_loses_nothing_and_files_nothing_twice(
    point: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    uninterrupted: dict[str, str],
) -> None:
    ws = Workspace(tmp_path)
    commits_before = ws.commits()
    crashed = CountingExtractor(ws.settings, crash=point)
    if point in STEPS:
        target, name = STEPS[point]
        with crashing(monkeypatch, target, name), pytest.raises(Crash):
            ws.heartbeat(crashed)
    else:
        with pytest.raises(Crash):
            ws.heartbeat(crashed)

    states, paid, intent, committed = CRASHES[point]
    assert ws.chunk_states() == states
    assert ws.paid_calls() == paid
    assert ws.intent() is intent
    assert (ws.commits() != commits_before) is committed

    again = CountingExtractor(ws.settings)
    report = ws.heartbeat(again)

    assert report.outcome in {"ok", "nothing-new"}
    assert again.calls == CALLS_AGAIN.get(point, 0)
    assert ws.paid_calls() == 2  # each chunk's answer paid for once
    assert ws.chunk_states() == ["committed", "committed"]
    assert not ws.intent()
    assert ws.memories() == uninterrupted


def test_a_heartbeat_after_the_recovery_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(tmp_path)
    with crashing(monkeypatch, committing, "finalize"), pytest.raises(Crash):
        ws.heartbeat(CountingExtractor(ws.settings))
    ws.heartbeat(CountingExtractor(ws.settings))
    commits, memories = ws.commits(), ws.memories()

    idle = CountingExtractor(ws.settings)
    report = ws.heartbeat(idle)

    assert (report.outcome, report.commit, idle.calls) == ("nothing-new", None, 0)
    assert (ws.commits(), ws.memories()) == (commits, memories)
