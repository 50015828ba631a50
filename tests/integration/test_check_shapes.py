"""`memoryd check` over what a daemon would trip on later: a source whose shape its format does
not read, a glob under a folder that cannot be listed, and memoryd as root over another user's
store (a warning, not a refusal)."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest
from tests.support.harness import Workspace

from memoryd.cli.check import cmd_check
from memoryd.daemon.preflight import root_warning
from memoryd.errors import EXIT_CONFIG, EXIT_OK
from memoryd.settings import LoadedConfig, Settings
from memoryd.sources.shapes import shape_problem, unreadable_glob

NOBODY = 65534


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def with_source(ws: Workspace, format_name: str, path: Path | str) -> Settings:
    agents = [{"name": "ops", "sources": [{"format": format_name, "path": str(path)}]}]
    return ws.settings("markers", agents=agents)


def check(settings: Settings, tmp_path: Path) -> tuple[int, str]:
    out = io.StringIO()
    config = LoadedConfig(tmp_path / "memoryd.toml", settings)
    code = cmd_check(argparse.Namespace(online=False), config, {}, out)
    return code, out.getvalue()


def test_a_claude_code_source_that_is_a_file_is_a_problem(ws: Workspace, tmp_path: Path) -> None:
    session = ws.write_log("session.jsonl", [])
    code, text = check(with_source(ws, "claude-code", session), tmp_path)
    assert code == EXIT_CONFIG, text
    assert f"{session} is not a folder, and a claude-code source is one" in text
    assert "~/.claude/projects" in text
    assert "configuration OK" not in text


def test_a_chatgpt_export_source_that_is_a_folder_is_a_problem(
    ws: Workspace, tmp_path: Path
) -> None:
    export = tmp_path / "export"
    export.mkdir()
    (export / "conversations.json").write_text("[]", encoding="utf-8")
    code, text = check(with_source(ws, "chatgpt-export", export), tmp_path)
    assert code == EXIT_CONFIG, text
    assert f"{export} is a folder, and a chatgpt-export source is a file" in text
    assert "conversations.json" in text
    # The right shapes pass.
    code, text = check(with_source(ws, "chatgpt-export", export / "conversations.json"), tmp_path)
    assert code == EXIT_OK, text
    code, text = check(with_source(ws, "claude-code", ws.logs), tmp_path)
    assert code == EXIT_OK, text


def test_shapes_of_missing_paths_and_globs_are_left_to_the_other_checks(tmp_path: Path) -> None:
    assert shape_problem("claude-code", str(tmp_path / "missing")) is None
    assert shape_problem("claude-code", str(tmp_path / "*.jsonl")) is None
    assert shape_problem("jsonl", str(tmp_path)) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists every folder; needs an ordinary user")
def test_a_glob_under_a_folder_that_cannot_be_entered_is_unreadable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    home.chmod(0o700 & ~0o100)  # not enterable
    try:
        reason = unreadable_glob(str(home / ".claude" / "projects" / "*" / "*.jsonl"))
    finally:
        home.chmod(0o700)
    assert reason is not None and "cannot be reached" in reason


def test_a_glob_whose_folder_exists_or_is_missing_is_not_unreadable(tmp_path: Path) -> None:
    assert unreadable_glob(str(tmp_path / "*.jsonl")) is None
    assert unreadable_glob(str(tmp_path / "missing" / "*.jsonl")) is None
    assert unreadable_glob(str(tmp_path / "plain.jsonl")) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the store to another user needs root")
def test_root_over_another_users_store_is_refused_and_says_why(
    ws: Workspace, tmp_path: Path
) -> None:
    settings = ws.settings("markers")
    assert root_warning(settings) is None  # root's own store
    os.chown(ws.store, NOBODY, NOBODY)
    code, text = check(settings, tmp_path)
    # Another user's repository is refused whoever runs memoryd (git would run that user's
    # filters and hooks); as root, the warning also says whose files root would leave.
    assert code == EXIT_CONFIG, text
    assert f"belongs to user id {NOBODY}" in text
    assert f"warning: At 'store.path': memoryd runs as root but {ws.store} belongs to" in text
    assert f"(uid {NOBODY})" in text
    assert root_warning(settings, euid=1000) is None  # not root: nothing to say
