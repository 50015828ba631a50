"""A workspace for end-to-end heartbeat tests: a store, a state folder, transcripts, a clock.

Everything is real: a git repository made by `memoryd init`'s code, the SQLite state database,
transcript files on disk and, for the Anthropic provider, the real SDK talking over HTTP to the
fake server. Only the clock is fixed, and retry waits are recorded instead of slept.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryd.extractors.extract import Extractor, MarkersExtractor
from memoryd.extractors.llm_extractor import LLMExtractor
from memoryd.heartbeat import HeartbeatReport
from memoryd.jobs.environment import Environment, open_state
from memoryd.jobs.heartbeat import build_heartbeat
from memoryd.jobs.parts import make_scrubber
from memoryd.jobs.reconcile import reconcile_state
from memoryd.llm.anthropic_client import AnthropicClient
from memoryd.llm.tool_choice import ToolChoices
from memoryd.settings import Settings, parse_settings
from memoryd.store.layout import init_store

TEST_KEY = "sk-ant-test-0000000000000000"
# Log event names of docs/events.md's stable core, the ones alerts may rely on.
STABLE_EVENTS = frozenset(
    {
        "heartbeat.started",
        "heartbeat.finished",
        "heartbeat.skipped",
        "source.skipped",
        "chunk.quarantined",
        "llm.retry",
        "llm.failed",
        "budget.exhausted",
        "rewrite.finished",
        "job.failed",
    }
)
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@dataclass
class Workspace:
    root: Path
    now: datetime = NOW
    waits: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    # What the workspace's "process" learnt about models refusing a forced tool choice: one per
    # workspace, so that no test sees what another one taught the process-wide default.
    tool_choices: ToolChoices = field(default_factory=ToolChoices)

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def settings(self, provider: str = "anthropic", **sections: Any) -> Settings:
        raw: dict[str, Any] = {
            "store": {"path": str(self.store)},
            "state": {"path": str(self.root / "state")},
            # One call per conversation, as most tests count calls per chunk (conversations of
            # different days would share a call otherwise); tests/integration/test_sections.py
            # sets `sections_per_call` itself.
            "llm": {"provider": provider, "max_attempts": 3, "sections_per_call": 1},
            "budget": {"daily_usd": 0},
            "backfill": {"since": "all"},
            "agents": [{"name": "ops", "sources": [{"format": "jsonl", "path": str(self.logs)}]}],
        }
        for key, value in sections.items():
            raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
        return parse_settings(raw)

    def init(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        init_store(self.store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")

    def write_log(
        self, name: str, rows: Sequence[Mapping[str, Any]], *, append: bool = False
    ) -> Path:
        path = self.logs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if append else "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
        return path

    def environment(self) -> Environment:
        return Environment(environ={}, clock=lambda: self.now)

    @contextmanager
    def extractor(self, settings: Settings, base_url: str | None) -> Iterator[Extractor]:
        scrub = make_scrubber(settings)  # what the jobs use: redaction and unsafe characters
        if base_url is None:
            yield MarkersExtractor(scrub)
            return
        with AnthropicClient(
            api_key=TEST_KEY,
            base_url=base_url,
            timeout_seconds=5,
            max_attempts=settings.llm.max_attempts,
            sleep=self.waits.append,
            tool_choices=self.tool_choices,
        ) as client:
            yield LLMExtractor(client, model=settings.llm.model, max_tokens=2000, scrub=scrub)

    def heartbeat(self, settings: Settings, base_url: str | None = None) -> HeartbeatReport:
        """One heartbeat as `memoryd.jobs.heartbeat.run_heartbeat` runs it (the state database
        reconciled with the store first), with this workspace's clock and extractor."""
        env = self.environment()
        with (
            open_state(settings, env, discard_corrupt=True) as state,
            self.extractor(settings, base_url) as extractor,
        ):
            heartbeat = build_heartbeat(settings, env, state, extractor)
            reconcile_state(state, heartbeat.git, heartbeat.settings.host, env.clock())
            return heartbeat.run()

    def memories(self) -> dict[str, str]:
        """The store's files without memoryd's own bookkeeping (`.memoryd/`)."""
        return {
            path: text for path, text in self.tree().items() if not path.startswith(".memoryd/")
        }

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.store), *args], check=True, capture_output=True, text=True
        ).stdout

    def commits(self) -> list[str]:
        return self.git("log", "--format=%s").splitlines()

    def read(self, relative: str) -> str:
        return (self.store / relative).read_text(encoding="utf-8")

    def facts(self, ref_folder: str) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = json.loads(self.read(f"{ref_folder}/items.json"))
        return data

    def tree(self) -> dict[str, str]:
        """Every file of the store (outside .git) with its content."""
        return {
            path.relative_to(self.store).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(self.store.rglob("*"))
            if path.is_file() and ".git" not in path.relative_to(self.store).parts
        }


def turn(role: str, text: str, when: str) -> dict[str, str]:
    return {"role": role, "content": text, "timestamp": when}
