"""`memoryd connect` / `disconnect` on the command line: the report, `--dry-run`, `--json`, the
exit code of a file it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd.cli import CONNECT_RUNTIMES, main
from memoryd.connect import RUNTIMES
from memoryd.errors import EXIT_CONFIG, EXIT_OK, EXIT_USAGE


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "memoryd.toml").write_text('[store]\npath = "store"\n', encoding="utf-8")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR", "PAPERCLIP_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def run(*args: str) -> int:
    return main(["--config", "memoryd.toml", "--log-level", "error", *args])


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_parser_knows_every_runtime() -> None:
    assert set(CONNECT_RUNTIMES) == set(RUNTIMES)


def test_connect_reports_each_file_then_nothing_to_do(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("connect", "claude-code", "--agent", "builder") == EXIT_OK
    first = capsys.readouterr().out
    assert f"created: {home}/.claude/settings.json" in first
    assert f"created: {home}/.claude.json" in first
    assert run("connect", "claude-code", "--agent", "builder") == EXIT_OK
    second = capsys.readouterr().out
    assert "created" not in second and second.count("unchanged: ") == 2


def test_dry_run_prints_the_diff_and_changes_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "o3"\n', encoding="utf-8")
    before = files_under(home)
    assert run("connect", "codex", "--dry-run") == EXIT_OK
    diff = capsys.readouterr().out
    assert f"--- {home}/.codex/config.toml\n+++ {home}/.codex/config.toml\n" in diff
    assert "+[mcp_servers.memoryd]\n" in diff
    assert "--- /dev/null\n" in diff and "--format codex" in diff
    assert files_under(home) == before


def test_json_report_and_disconnect(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = home.parent / "repo"
    project.mkdir()
    args = ("openclaw", "--scope", "project", "--project", str(project), "--json")
    assert run("connect", *args) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["runtime"] == "openclaw" and report["scope"] == "project"
    assert [f["action"] for f in report["files"]] == ["created", "created"]
    assert (project / "AGENTS.md").exists()
    assert run("disconnect", *args) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert [f["action"] for f in report["files"]] == ["removed", "removed"]
    assert not (project / "AGENTS.md").exists()


def test_an_unparsable_file_exits_78_naming_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".claude").mkdir()
    settings = home / ".claude" / "settings.json"
    settings.write_text('{"hooks": ', encoding="utf-8")
    assert run("connect", "claude-code") == EXIT_CONFIG
    error = capsys.readouterr().err
    assert f"{settings}: is not valid JSON" in error and "line 1 column 11" in error
    assert settings.read_text(encoding="utf-8") == '{"hooks": '
    assert not (home / ".claude.json").exists()


def test_a_missing_project_folder_is_a_usage_error(home: Path) -> None:
    code = run("connect", "paperclip", "--scope", "project", "--project", str(home / "nope"))
    assert code == EXIT_USAGE


def test_a_claude_code_project_outside_git_gets_a_note(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = home.parent / "plain-folder"
    project.mkdir()
    assert run("connect", "claude-code", "--scope", "project", "--project", str(project)) == 0
    out = capsys.readouterr().out
    assert f"note: {project} is not in a git work tree" in out
    (project / ".git").mkdir()
    assert run("connect", "claude-code", "--scope", "project", "--project", str(project)) == 0
    assert "note:" not in capsys.readouterr().out
