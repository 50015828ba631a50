"""`make demo`, the README's first command, runs end to end: the script on a copy of
`examples/` (so the work tree is not written), with this interpreter's `memoryd` first on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_runs_every_step_and_files_what_it_shows(tmp_path: Path) -> None:
    shutil.copytree(REPO_ROOT / "examples", tmp_path / "examples")
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "memoryd").exists(), "the demo runs the installed memoryd command"
    environ = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", str(tmp_path / "examples" / "demo.sh")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    steps = [line for line in result.stdout.splitlines() if "== memoryd" in line]
    assert len(steps) >= 7, steps  # init, check, dry run, heartbeat, rewrite, context, search...
    assert (
        tmp_path / "demo-out" / "store" / "life" / "areas" / "people" / "dana-whitfield"
    ).is_dir()
    assert not (REPO_ROOT / "examples" / "demo-out").exists()  # the copy's, not the tree's
