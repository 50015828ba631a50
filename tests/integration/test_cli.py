"""The command line as an operator runs it: a real `memoryd` process, its exit codes and output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.cli import json_lines, memoryd, write_config

from memoryd.errors import EXIT_CONFIG, EXIT_OK, EXIT_TEMPFAIL, EXIT_USAGE

pytestmark = pytest.mark.slow


def test_check_reports_every_problem_and_exits_78(tmp_path: Path) -> None:
    (tmp_path / "memoryd.toml").write_text(
        '[store]\npath = "s"\ncolour = 1\n[llm]\nprovider = "x"\n', encoding="utf-8"
    )
    result = memoryd("check", cwd=tmp_path)
    assert result.returncode == EXIT_CONFIG
    assert "memoryd.toml" in result.stderr
    assert "At 'store.colour': unknown key" in result.stderr
    assert "At 'llm.provider'" in result.stderr


def test_check_finds_the_config_through_the_environment(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before_init = memoryd("check", cwd=elsewhere, env={"MEMORYD_CONFIG": str(config)})
    assert before_init.returncode == EXIT_CONFIG  # a set-up runs `init` first
    assert "At 'store.path'" in before_init.stdout
    assert "warning: At 'store.path'" not in before_init.stdout
    assert "run `memoryd init` with this configuration first" in before_init.stdout
    assert memoryd("init", cwd=elsewhere, env={"MEMORYD_CONFIG": str(config)}).returncode == 0
    result = memoryd("check", cwd=elsewhere, env={"MEMORYD_CONFIG": str(config)})
    assert result.returncode == EXIT_OK, result.stdout + result.stderr
    assert "configuration OK" in result.stdout
    assert json_lines(result.stderr)[-1]["event"] == "check.finished"


def test_a_missing_api_key_is_a_configuration_error(tmp_path: Path) -> None:
    write_config(tmp_path)
    text = (
        (tmp_path / "memoryd.toml").read_text(encoding="utf-8").replace('"markers"', '"anthropic"')
    )
    (tmp_path / "memoryd.toml").write_text(text, encoding="utf-8")
    result = memoryd("check", cwd=tmp_path)
    assert result.returncode == EXIT_CONFIG
    assert "no API key found" in result.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert memoryd("frobnicate", cwd=tmp_path).returncode == EXIT_USAGE
    assert memoryd("--log-level", "loud", "check", cwd=tmp_path).returncode == EXIT_USAGE


def test_init_is_idempotent_and_heartbeat_files_markers(tmp_path: Path) -> None:
    write_config(tmp_path)
    first = memoryd("init", cwd=tmp_path)
    assert first.returncode == EXIT_OK, first.stderr
    assert "initialised the store" in first.stdout
    second = memoryd("init", cwd=tmp_path)
    assert second.returncode == EXIT_OK
    assert "nothing changed" in second.stdout
    log = subprocess.run(
        ["git", "-C", str(tmp_path / "store"), "log", "--oneline"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert len(log.splitlines()) == 1

    (tmp_path / "logs" / "a.jsonl").write_text(
        json.dumps(
            {
                "role": "user",
                "content": "tacit: Prefers mornings",
                "timestamp": "2026-03-01T09:00:00Z",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    dry = memoryd("heartbeat", "--dry-run", cwd=tmp_path)
    assert dry.returncode == EXIT_OK
    dry_report = json.loads(dry.stdout)
    assert dry_report["chunks_to_send"] == 1
    assert (dry_report["provider"], dry_report["estimated_cost_usd"]) == ("markers", 0.0)
    assert not (tmp_path / "store" / "MEMORY.md").read_text(encoding="utf-8").count("Prefers")
    beat = memoryd("heartbeat", cwd=tmp_path)
    assert beat.returncode == EXIT_OK, beat.stderr
    assert "Prefers mornings" in (tmp_path / "store" / "MEMORY.md").read_text(encoding="utf-8")
    events = [line["event"] for line in json_lines(beat.stderr)]
    assert events[0] == "heartbeat.started"
    assert "heartbeat.finished" in events


def test_heartbeat_on_an_uninitialised_store_says_what_to_do(tmp_path: Path) -> None:
    write_config(tmp_path)
    result = memoryd("heartbeat", cwd=tmp_path)
    assert result.returncode != EXIT_OK
    assert "memoryd init" in result.stderr


def test_a_held_lock_makes_a_one_shot_heartbeat_exit_75(tmp_path: Path) -> None:
    write_config(tmp_path)
    assert memoryd("init", cwd=tmp_path).returncode == EXIT_OK
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from memoryd.jobs.lock import single_writer\n"
            "with single_writer(Path(sys.argv[1])):\n"
            "    print('held', flush=True); sys.stdin.read()",
            str(tmp_path / "state"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": os.pathsep.join(sys.path), "PATH": os.environ["PATH"]},
    )
    with holder:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        result = memoryd("heartbeat", cwd=tmp_path)
        assert holder.stdin is not None
        holder.stdin.close()
    assert result.returncode == EXIT_TEMPFAIL
    assert f"pid {holder.pid}" in result.stderr
