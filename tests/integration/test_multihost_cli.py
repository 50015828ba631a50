"""The one-shot commands' exit codes for a repository memoryd must not write to, as subprocesses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.support.cli import memoryd, write_config

from memoryd.errors import EXIT_CONFIG, EXIT_OK

pytestmark = pytest.mark.slow


def test_a_detached_head_exits_78_with_what_to_do_and_nothing_committed(tmp_path: Path) -> None:
    write_config(tmp_path)
    assert memoryd("init", cwd=tmp_path).returncode == EXIT_OK
    store = tmp_path / "store"
    subprocess.run(["git", "-C", str(store), "checkout", "--quiet", "--detach"], check=True)
    head = subprocess.run(
        ["git", "-C", str(store), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
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
    beat = memoryd("--log-format", "json", "heartbeat", cwd=tmp_path)
    assert beat.returncode == EXIT_CONFIG, beat.stderr
    assert "HEAD is detached" in beat.stderr
    check = memoryd("check", cwd=tmp_path)
    assert check.returncode == EXIT_CONFIG
    assert "detached" in check.stdout + check.stderr
    after = subprocess.run(
        ["git", "-C", str(store), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    assert after == head
    status = memoryd("status", cwd=tmp_path)
    assert "REPOSITORY: HEAD is detached" in status.stdout


def test_check_warns_when_another_host_shares_this_hosts_range_of_fact_ids(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, "[git]\npush = true\n")
    config = tmp_path / "memoryd.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            'path = "state"', 'path = "state"\nhost = "host-93"'
        ),
        encoding="utf-8",
    )
    assert memoryd("init", cwd=tmp_path).returncode == EXIT_OK
    hosts = tmp_path / "store" / ".memoryd" / "hosts"
    hosts.mkdir(parents=True, exist_ok=True)
    (hosts / "host-4.json").write_text('{"host": "host-4"}', encoding="utf-8")
    check = memoryd("check", cwd=tmp_path)
    assert "host 'host-4' numbers its fact ids in the same range" in check.stdout + check.stderr
