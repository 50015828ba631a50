"""The real agent CLIs for the connect tests: Claude Code and Codex installed from npm, once, into
a cache folder outside the work tree, and reused; and a `memoryd` launcher the runtimes run.

`installed_clis()` returns the two executables, or the reason they cannot be had (no npm, the
registry unreachable, an install that failed); the tests skip with that reason.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
CODEX = "@openai/codex@0.171.0"
PACKAGES = (CLAUDE_CODE, CODEX)
INSTALL_TIMEOUT = 600


@dataclass(frozen=True)
class AgentClis:
    claude: Path
    codex: Path


def cache_prefix() -> Path:
    configured = os.environ.get("MEMORYD_AGENT_CLIS")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "memoryd-clis"


def installed_clis() -> AgentClis | str:
    """The CLIs, installed now if they are not yet; a string saying why not otherwise."""
    prefix = cache_prefix()
    clis = AgentClis(
        claude=prefix / "node_modules" / ".bin" / "claude",
        codex=prefix / "node_modules" / ".bin" / "codex",
    )
    if not (_runs(clis.claude, "2.1.197") and _runs(clis.codex, "0.171.0")):
        npm = shutil.which("npm")
        if npm is None:
            return "npm is not installed: the real Claude Code and Codex CLIs cannot be had"
        prefix.mkdir(parents=True, exist_ok=True)
        try:
            result = subprocess.run(
                [
                    npm,
                    "install",
                    "--no-fund",
                    "--no-audit",
                    "--prefix",
                    str(prefix),
                    CLAUDE_CODE,
                    CODEX,
                ],
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"npm install of {CLAUDE_CODE} and {CODEX} took over {INSTALL_TIMEOUT} s"
        if result.returncode != 0:
            tail = result.stderr.strip().splitlines()[-3:]
            return f"npm install of {CLAUDE_CODE} and {CODEX} failed: {' / '.join(tail)}"
        if not (_runs(clis.claude, "2.1.197") and _runs(clis.codex, "0.171.0")):
            return f"the CLIs installed under {prefix} do not run here"
    return clis


def _runs(executable: Path, version: str) -> bool:
    if not executable.exists():
        return False
    try:
        result = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and version in result.stdout


def context_takes_format() -> bool:
    """Whether this memoryd's `context` has `--format` (the hooks `connect` writes use it)."""
    from memoryd.cli import build_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            build_parser().parse_args(["context", "--agent", "a", "--format", "claude-code"])
    except SystemExit:
        return False
    return True


def write_launcher(folder: Path) -> Path:
    """A `memoryd` executable in `folder` running this checkout's memoryd with this Python.

    Where `context` has no `--format` yet, the launcher drops that option, so the connection
    itself is still tested end to end."""
    folder.mkdir(parents=True, exist_ok=True)
    launcher = folder / "memoryd"
    strip = not context_takes_format()
    launcher.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "from memoryd.cli import main\n"
        "arguments = sys.argv[1:]\n"
        f"if {strip!r} and '--format' in arguments:\n"
        "    at = arguments.index('--format')\n"
        "    del arguments[at : at + 2]\n"
        "sys.exit(main(arguments))\n",
        encoding="utf-8",
    )
    launcher.chmod(0o755)
    return launcher


def strings_in(value: object) -> list[str]:
    """Every string inside a JSON value, depth first: the text a model request carries."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings_in(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings_in(item)]
    return []
