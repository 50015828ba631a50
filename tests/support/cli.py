"""Running `memoryd` as a child process the way an operator does: a small config, the run, and
its JSON log lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def memoryd(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def json_lines(stderr: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    for line in lines:
        assert {"event", "level", "timestamp"} <= set(line)
    return lines


def write_config(folder: Path, extra: str = "") -> Path:
    (folder / "logs").mkdir(exist_ok=True)
    config = folder / "memoryd.toml"
    config.write_text(
        f"""
[store]
path = "store"
[state]
path = "state"
[llm]
provider = "markers"
[backfill]
since = "all"
{extra}
[[agents]]
name = "ops"
  [[agents.sources]]
  format = "jsonl"
  path = "logs"
""",
        encoding="utf-8",
    )
    return config
