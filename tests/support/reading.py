"""A `memoryd` child for the reading commands (context, search, forget, supersede, mcp), and the
transcript they read from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

JANE = "life/areas/people/jane-doe"


def memoryd(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = child_environment(folder)
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "--log-format", "json", *args],
        cwd=folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def child_environment(home: Path) -> dict[str, str]:
    """A small environment for a memoryd child; coverage's settings pass through, so that the
    child is measured like the tests' own process."""
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    environ.update({k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")})
    return environ


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder / "store"), *args], capture_output=True, text=True, check=True
    ).stdout


def today_at(hour: int) -> str:
    # The commands read the wall clock, so the transcript is dated today (UTC, the default zone).
    return datetime.now(UTC).replace(hour=hour, minute=0, second=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_transcript(folder: Path) -> None:
    lines = [
        ("user", "remember: person Jane Doe: Joined Acme as CTO"),
        ("user", "remember: person Jane Doe: Lives in Lisbon"),
        ("assistant", "note: Met Jane about the launch\ntacit: Prefers terse answers"),
        ("assistant", "skill: deploy: run make deploy-staging first"),
    ]
    with (folder / "logs" / "a.jsonl").open("w", encoding="utf-8") as handle:
        for role, text in lines:
            row = {"role": role, "content": text, "timestamp": today_at(0)}
            handle.write(json.dumps(row) + "\n")
