"""Reading memoryd's systemd unit files as data, and running `systemd-analyze` on copies of them
(tests/integration/test_systemd_units.py says why verify is judged by its output)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
UNITS = REPOSITORY / "systemd"
INSTALLED_PROGRAM = "/usr/local/bin/memoryd"
USER_PROGRAM = "%h/.local/bin/memoryd"

Directive = tuple[str, str, str]  # section, key, value


def parse_unit(text: str) -> list[Directive]:
    """The directives of a unit file in order; repeated keys are kept, as systemd keeps them."""
    directives: list[Directive] = []
    section = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, equals, value = line.partition("=")
        if not equals or raw.rstrip().endswith("\\"):
            raise ValueError(f"line {number}: not a plain key=value line: {raw!r}")
        directives.append((section, key.strip(), value.strip()))
    return directives


_SPAN = re.compile(r"(\d+)\s*(ms|s|sec|min|h|d)")
_SPAN_SECONDS = {"ms": 0.001, "s": 1, "sec": 1, "min": 60, "h": 3600, "d": 86400}


def span_seconds(span: str) -> float:
    """A systemd time span such as '3min' or '1h 30s', in seconds (the units these files use)."""
    if not re.fullmatch(rf"\s*(?:{_SPAN.pattern}\s*)+", span):
        raise ValueError(f"not a time span this test understands: {span!r}")
    return sum(int(n) * _SPAN_SECONDS[unit] for n, unit in _SPAN.findall(span))


def memoryd_program() -> str:
    """The memoryd installed alongside this interpreter (the tests run inside that venv)."""
    beside = Path(sys.executable).parent / "memoryd"
    found = str(beside) if beside.exists() else shutil.which("memoryd")
    if found is None:
        pytest.fail("memoryd is not installed in this environment")
    return found


def run_analyze(
    analyze: str, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [analyze, *args],
        cwd=cwd,
        env={**os.environ, "SYSTEMD_COLORS": "0", "SYSTEMD_PAGER": "", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_silent(result: subprocess.CompletedProcess[str]) -> None:
    output = (result.stdout + result.stderr).strip()
    assert output == "", f"systemd-analyze said:\n{output}"
    assert result.returncode == 0
