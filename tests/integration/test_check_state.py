"""`memoryd check` over the state database and the budget: what the next job would do about a
state database that is another store's, behind or ahead of the store is a warning that names the
file, one that is garbage is a problem (exit 78) with the fix, nothing is changed, and a
per-heartbeat ceiling below one full chunk is a warning too."""

from __future__ import annotations

import argparse
import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.support.harness import Workspace, turn

from memoryd.cli.check import cmd_check
from memoryd.errors import EXIT_CONFIG, EXIT_OK
from memoryd.settings import LoadedConfig, Settings
from memoryd.state.facade import DATABASE_FILE_NAME
from memoryd.store.layout import init_store

HOST = "host-a"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def markers(ws: Workspace, **sections: Any) -> Settings:
    return ws.settings("markers", state={"host": HOST}, **sections)


def check(
    settings: Settings,
    tmp_path: Path,
    environ: dict[str, str] | None = None,
    *,
    expect: int = EXIT_OK,
) -> str:
    out = io.StringIO()
    config = LoadedConfig(tmp_path / "memoryd.toml", settings)
    code = cmd_check(argparse.Namespace(online=False), config, environ or {}, out)
    assert code == expect, out.getvalue()
    return out.getvalue()


def database(ws: Workspace) -> Path:
    return ws.root / "state" / DATABASE_FILE_NAME


def file_one_fact(ws: Workspace, settings: Settings, name: str) -> None:
    ws.write_log(
        f"{name}.jsonl",
        [turn("user", f"remember: person {name} Doe: Joined Acme", "2026-03-01T09:00:00Z")],
    )
    ws.heartbeat(settings)


def test_a_state_database_in_step_with_the_store_is_no_warning(
    ws: Workspace, tmp_path: Path
) -> None:
    settings = markers(ws)
    file_one_fact(ws, settings, "Jane")
    text = check(settings, tmp_path)
    assert "warning" not in text
    assert text.endswith("configuration OK\n")


def test_a_garbage_state_database_is_a_problem_with_the_fix_and_is_left_alone(
    ws: Workspace, tmp_path: Path
) -> None:
    settings = markers(ws)
    database(ws).parent.mkdir(parents=True)
    database(ws).write_bytes(b"this is not a database at all\n" * 100)
    text = check(settings, tmp_path, expect=EXIT_CONFIG)
    assert f"error: At 'state.path': {database(ws)}" in text
    assert "moves it aside and rebuilds the state from the store" in text
    assert f"mv {database(ws)} {database(ws)}.damaged" in text
    assert "configuration OK" not in text
    assert database(ws).read_bytes() == b"this is not a database at all\n" * 100
    assert not [p for p in database(ws).parent.iterdir() if ".corrupt-" in p.name]


def test_the_state_database_of_another_store_is_a_warning(ws: Workspace, tmp_path: Path) -> None:
    settings = markers(ws)
    file_one_fact(ws, settings, "Jane")
    other = tmp_path / "other-store"
    init_store(other, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    head = ws.git("rev-parse", "HEAD")

    text = check(markers(ws, store={"path": str(other)}), tmp_path)
    assert f"warning: At 'state.path': {database(ws)} is the state of another store" in text
    assert "rebuilds the state from this one" in text
    assert "configuration OK" in text
    # Nothing was rebound: the store it belongs to still finds it in step.
    assert "warning" not in check(settings, tmp_path)
    assert ws.git("rev-parse", "HEAD") == head


def test_a_state_database_ahead_of_a_restored_store_is_a_warning(
    ws: Workspace, tmp_path: Path
) -> None:
    settings = markers(ws)
    file_one_fact(ws, settings, "Jane")
    backup = tmp_path / "backup"
    shutil.copytree(ws.store, backup)
    file_one_fact(ws, settings, "John")
    shutil.rmtree(ws.store)
    shutil.copytree(backup, ws.store)

    text = check(settings, tmp_path)
    assert f"warning: At 'state.path': {database(ws)} is ahead of the store" in text
    assert "the next heartbeat or rewrite rebuilds it from the store" in text


def test_a_state_database_behind_the_store_is_a_warning(ws: Workspace, tmp_path: Path) -> None:
    settings = markers(ws)
    file_one_fact(ws, settings, "Jane")
    backup = tmp_path / "state-backup"
    shutil.copytree(ws.root / "state", backup)
    file_one_fact(ws, settings, "John")
    shutil.rmtree(ws.root / "state")
    shutil.copytree(backup, ws.root / "state")

    text = check(settings, tmp_path)
    assert f"warning: At 'state.path': {database(ws)} is behind the store" in text


def test_this_stores_state_under_another_host_name_is_a_warning_to_keep_it(
    ws: Workspace, tmp_path: Path
) -> None:
    settings = markers(ws)
    file_one_fact(ws, settings, "Jane")

    text = check(ws.settings("markers", state={"host": "vps-1"}), tmp_path)

    assert f"warning: At 'state.host': {database(ws)} is this store's state" in text
    assert "keeps it" in text
    assert "another store" not in text


def anthropic(ws: Workspace, heartbeat_usd: float) -> Settings:
    return ws.settings(
        "anthropic",
        llm={"model": "claude-sonnet-5-5", "chunk_tokens": 12000},
        budget={"daily_usd": 0, "heartbeat_usd": heartbeat_usd},
    )


KEY = {"ANTHROPIC_API_KEY": "sk-ant-test-0000"}


def test_a_heartbeat_ceiling_below_one_full_chunk_is_a_warning(
    ws: Workspace, tmp_path: Path
) -> None:
    # (12000 + 3000) input tokens at $2/M and 800 output tokens at $10/M: $0.038.
    text = check(anthropic(ws, 0.037), tmp_path, KEY)
    assert "warning: At 'budget.heartbeat_usd': $0.037 is below the estimated cost" in text
    assert "($0.0380: 15000 input tokens" in text
    assert "each heartbeat still sends its first chunk and then stops" in text
    assert "configuration OK" in text


def test_a_heartbeat_ceiling_above_one_full_chunk_is_no_warning(
    ws: Workspace, tmp_path: Path
) -> None:
    assert "heartbeat_usd" not in check(anthropic(ws, 0.039), tmp_path, KEY)
    assert "heartbeat_usd" not in check(anthropic(ws, 0), tmp_path, KEY)


def test_the_chunk_estimate_uses_the_size_clamped_under_the_price_band(
    ws: Workspace, tmp_path: Path
) -> None:
    # Haiku 5.5 chunks are cut to 95,000 tokens whatever chunk_tokens says: (95000 + 3000) in
    # at $0.10/M and 800 out at $0.50/M is $0.0102, not the $0.0207 of 200,000-token chunks.
    def haiku(heartbeat_usd: float) -> Settings:
        return ws.settings(
            "anthropic",
            llm={"model": "claude-haiku-5-5", "chunk_tokens": 200_000},
            budget={"daily_usd": 0, "heartbeat_usd": heartbeat_usd},
        )

    assert "heartbeat_usd" not in check(haiku(0.015), tmp_path, KEY)
    text = check(haiku(0.010), tmp_path, KEY)
    assert "($0.0102: 98000 input tokens, a chunk of 95000 plus 3000" in text
