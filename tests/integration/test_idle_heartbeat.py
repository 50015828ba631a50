"""An idle heartbeat is nearly free: what a real `memoryd heartbeat` process imports
when nothing is new, and that it still files what is new once there is something.

The speed itself is measured by `benchmarks/bench_heartbeat.py` (`idle`), not here: these tests
check the causes, the modules an idle heartbeat must not load, which a change can bring back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.harness import TEST_KEY, Workspace, turn

pytestmark = pytest.mark.slow

# What only a heartbeat with something to file (or a model to ask) needs.
NOT_WHEN_IDLE = (
    "anthropic",
    "httpx",
    "git",  # GitPython: memoryd runs git as a command
    "memoryd.llm.anthropic_client",
    "memoryd.extractors.apply",
    "memoryd.extractors.contract",
    "memoryd.extractors.context",
    "memoryd.extractors.gate",
    "memoryd.extractors.markers",
    "memoryd.extractors.pending",
    "memoryd.extractors.sections",
    "memoryd.prompts",
    "memoryd.jobs.after_merge",
    "memoryd.jobs.reading",
    "memoryd.reading.search",
    "memoryd.store.refresh",
    "memoryd.store.facts",
    "memoryd.sync._merge",
    # The entity catalogue and its cache (a job names the cache's file from `memoryd.store`).
    "memoryd.store.catalog._catalog",
    "memoryd.store.catalog._cache",
    "memoryd.store.catalog._snapshot",
    "memoryd.store.catalog._snapshot_files",
    "memoryd.store.catalog._labels",
    "memoryd.store.reads",
    # The readers of formats the configuration does not name (it names only "jsonl").
    "memoryd.sources.aider",
    "memoryd.sources.chatgpt",
    "memoryd.sources.claude_code",
    "memoryd.sources.codex",
    "memoryd.sources.markdown",
    "memoryd.sources.openclaw",
    "memoryd.sources.paperclip",
    # Cleaning text, the fact store, and what only `memoryd init` writes.
    "memoryd.sources.clean",
    "memoryd.store.items",
    "memoryd.store.index",
    "memoryd.store.tacit",
    # pydantic's search for plugins (`memoryd.cli.startup.without_pydantic_plugins`).
    "importlib.metadata",
    "email",
    "zipfile",
)

PROBE = """
import json, sys
from memoryd.cli import main
code = main(["--config", sys.argv[1], "--log-format", "json", "heartbeat"])
print(json.dumps({"code": code, "loaded": sorted(m for m in sys.argv[2:] if m in sys.modules)}))
"""


def write_config(ws: Workspace) -> Path:
    config = ws.root / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{ws.store}"\n'
        f'[state]\npath = "{ws.root / "state"}"\nhost = "idle"\n'
        # Never contacted: an idle heartbeat asks no model.
        '[llm]\nprovider = "anthropic"\nbase_url = "http://127.0.0.1:9"\n'
        '[budget]\ndaily_usd = 0\n[backfill]\nsince = "all"\n'
        f'[[agents]]\nname = "ops"\n  [[agents.sources]]\n  format = "jsonl"\n'
        f'  path = "{ws.logs}"\n',
        encoding="utf-8",
    )
    return config


def probe(ws: Workspace, config: Path, *modules: str) -> tuple[dict[str, object], str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(ws.root),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "ANTHROPIC_API_KEY": TEST_KEY,
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(config), *modules],
        env=env,
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = result.stdout.strip().splitlines()
    assert lines, result.stderr
    report: dict[str, object] = json.loads(lines[-1])
    return report, result.stdout + result.stderr


@pytest.fixture
def consumed(tmp_path: Path) -> tuple[Workspace, Path]:
    """A store whose only transcript was read to its end by an earlier heartbeat."""
    ws = Workspace(tmp_path)
    ws.init()
    rows = [turn("user", "the build host is called aurora", "2026-03-09T10:00:00Z")]
    for i in range(1, 4):
        rows.append(turn("assistant", f"noted {i}", "2026-03-09T10:01:00Z"))
    ws.write_log("s1.jsonl", rows)
    ws.heartbeat(ws.settings("markers", state={"host": "idle"}))
    return ws, write_config(ws)


def test_an_idle_heartbeat_imports_neither_the_sdk_nor_the_filing_machinery(
    consumed: tuple[Workspace, Path],
) -> None:
    ws, config = consumed
    commits = ws.commits()
    report, output = probe(ws, config, *NOT_WHEN_IDLE)
    assert report == {"code": 0, "loaded": []}, output
    assert "heartbeat nothing-new" in output
    assert ws.commits() == commits  # nothing committed


def test_a_heartbeat_with_something_new_still_files_it(consumed: tuple[Workspace, Path]) -> None:
    # The same process shape with a new marker line: the lazily imported parts do their work.
    ws, config = consumed
    config.write_text(
        config.read_text(encoding="utf-8").replace('provider = "anthropic"', 'provider = "markers"')
    )
    marker = "remember: project Backups: the backup disk is in rack 4"
    ws.write_log("s1.jsonl", [turn("user", marker, "2026-03-09T11:00:00Z")], append=True)
    commits = len(ws.commits())
    lazy = ["memoryd.extractors.apply", "memoryd.sources.clean"]
    report, output = probe(ws, config, *lazy)
    assert report == {"code": 0, "loaded": lazy}, output
    assert len(ws.commits()) == commits + 1
    assert "rack 4" in "".join(ws.memories().values())
