"""`make demo`, the README's first command, runs end to end: the script on a copy of
`examples/` (so the work tree is not written), with this interpreter's `memoryd` first on PATH;
and the lines the README shows of its output are what the current code prints."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_OUTPUT_MARK = "<!-- demo-output: checked by tests/integration/test_demo.py -->"
# What changes from run to run, as the README writes it.
PLACEHOLDERS = {"<sha>": "[0-9a-f]{7,40}", "<path>": r"\S+", "<time>": r"\S+"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def readme_demo_lines() -> list[str]:
    """The lines of the README's block after `DEMO_OUTPUT_MARK`."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(DEMO_OUTPUT_MARK, 1)[1].split("```text\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def line_pattern(line: str) -> re.Pattern[str]:
    """`line` as a whole-line pattern, each placeholder standing for its kind of text."""
    parts = re.split("(" + "|".join(map(re.escape, PLACEHOLDERS)) + ")", line)
    return re.compile(
        "^" + "".join(PLACEHOLDERS.get(part, re.escape(part)) for part in parts) + "$",
        re.MULTILINE,
    )


def run_demo(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    shutil.copytree(REPO_ROOT / "examples", tmp_path / "examples")
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "memoryd").exists(), "the demo runs the installed memoryd command"
    environ = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", str(tmp_path / "examples" / "demo.sh")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_demo_runs_every_step_and_files_what_it_shows(tmp_path: Path) -> None:
    result = run_demo(tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    steps = [line for line in result.stdout.splitlines() if "== memoryd" in line]
    assert len(steps) >= 7, steps  # init, check, dry run, heartbeat, rewrite, context, search...
    assert (
        tmp_path / "demo-out" / "store" / "life" / "areas" / "people" / "dana-whitfield"
    ).is_dir()
    assert not (REPO_ROOT / "examples" / "demo-out").exists()  # the copy's, not the tree's
    printed = ANSI.sub("", result.stdout)
    shown = readme_demo_lines()
    assert len(shown) >= 5, shown
    missing = [line for line in shown if not line_pattern(line).search(printed)]
    assert missing == [], "README lines the demo does not print:\n" + "\n".join(missing)


def test_a_readme_line_the_code_does_not_print_is_caught() -> None:
    printed = "heartbeat ok: +1 fact, 1 entity; 1 chunk extracted, 0 failed; commit ab12cd3\n"
    assert line_pattern(
        "heartbeat ok: +1 fact, 1 entity; 1 chunk extracted, 0 failed; commit <sha>"
    ).search(printed)
    assert not line_pattern("heartbeat ok: +1 facts, 1 entities; <path>").search(printed)
