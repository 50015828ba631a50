"""`memoryd connect` run by its full path from outside its venv writes that same memoryd into
the runtime's configuration, so the hook and the server run it whatever the runtime's PATH."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_running_memoryd_is_written_by_its_absolute_path(tmp_path: Path) -> None:
    memoryd = Path(sys.executable).parent / "memoryd"
    if not memoryd.is_file():
        pytest.skip(f"no memoryd command beside {sys.executable}")
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run(
        [
            str(memoryd),
            "--config",
            str(REPO_ROOT / "examples" / "demo.toml"),
            "--log-level",
            "warning",
            "connect",
            "codex",
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},  # no memoryd on this PATH
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f'+command = "{memoryd.absolute()}"' in result.stdout
    assert not (home / ".codex").exists()  # a dry run writes nothing
