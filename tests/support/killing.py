"""Kill a real `memoryd` subprocess and count what the next run pays: what test_crash.py and
test_crash_ahead.py share.

`write_config` points a workspace at a fake server; `start` runs a command of memoryd (by default
`heartbeat`) with a clean environment of its own; `finish` waits for it (killing it if it
outlives the timeout); `wait_for` polls a condition without sleeping longer than a tick;
`held_after` answers the first requests at once and holds the later ones (a slow model: the test
kills memoryd while they are in flight); `point_at` sends the next run of a config to another
fake server; `run` starts a heartbeat that the `git` wrapper of `git_wrapper` kills at a named
point (before staging, after committing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import RecordedRequest, ToolUse
from tests.support.harness import Workspace
from tests.support.marker_model import marker_model

Handler = Callable[[RecordedRequest], ToolUse]


def environment(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment memoryd runs with: PATH, HOME under the test's root, a key, this
    interpreter's import path; `extra` added (or replacing)."""
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    environ.update(extra or {})
    return environ


def write_config(workspace: Workspace, base_url: str, *llm: str) -> Path:
    """`memoryd.toml` in the workspace: the fake server at `base_url`, `llm` lines added to the
    `[llm]` section, store, state and logs in the workspace."""
    config = workspace.root / "memoryd.toml"
    text = ops_config(
        llm=anthropic_llm(base_url, *llm),
        store=workspace.store,
        state=workspace.root / "state",
        logs=workspace.logs,
    )
    config.write_text(text, encoding="utf-8")
    return config


def command_line(config: Path, command: str) -> list[str]:
    """The argv of `memoryd --config CONFIG --log-format json COMMAND`."""
    return [
        *(sys.executable, "-m", "memoryd", "--config", str(config), "--log-format", "json"),
        command,
    ]


def start(
    config: Path, root: Path, extra: Mapping[str, str] | None = None, command: str = "heartbeat"
) -> subprocess.Popen[str]:
    """`memoryd --config CONFIG --log-format json COMMAND`, running."""
    return subprocess.Popen(
        command_line(config, command),
        env=environment(root, extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> int:
    """Its exit status, once it ended (killed if it runs past `timeout` seconds)."""
    try:
        process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode


def wait_for(condition: Callable[[], bool], deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, "timed out waiting for the subprocess"
        time.sleep(0.02)


def normalized_tree(workspace: Workspace) -> dict[str, str]:
    """The store's memories, the workspace's own path written `WS` (two runs compare equal)."""
    return {
        path: text.replace(str(workspace.root), "WS") for path, text in workspace.memories().items()
    }


def model(request: RecordedRequest) -> ToolUse:
    """The marker model, answering at once."""
    return marker_model(request)


def held_after(answered: int, delay: float) -> tuple[list[int], Handler]:
    """A handler answering the first `answered` requests at once and holding every later one
    `delay` seconds; the list counts the requests seen."""
    seen = [0]

    def handler(request: RecordedRequest) -> ToolUse:
        seen[0] += 1
        answer = model(request)
        return answer if seen[0] <= answered else ToolUse(answer.input, delay_seconds=delay)

    return seen, handler


def point_at(config: Path, base_url: str) -> None:
    """Send the next runs of `config` to the fake server at `base_url`."""
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r'base_url = ".*"', f'base_url = "{base_url}"', text))


REAL_GIT = shutil.which("git")
WRAPPER = """#!/bin/sh
# Test wrapper: run the real git; kill memoryd (our parent) at the point named in $KILL_AT,
# once (the marker file is consumed). Paths are staged by `git update-index` (files) or `git add`
# (folders); a commit is made by `git commit`, or by `update-ref` moving the branch to a commit
# built by `commit-tree` (only memoryd's paths staged).
if [ -n "$KILL_MARKER" ] && [ -e "$KILL_MARKER" ]; then
  for arg in "$@"; do
    if [ "$KILL_AT" = "before-add" ] && [ "$arg" = "add" -o "$arg" = "update-index" ]; then
      rm -f "$KILL_MARKER"; kill -9 "$PPID"; exit 1
    fi
    if [ "$KILL_AT" = "after-commit" ] && [ "$arg" = "commit" -o "$arg" = "update-ref" ]; then
      "$REAL_GIT" "$@"; status=$?
      rm -f "$KILL_MARKER"; kill -9 "$PPID"; exit $status
    fi
  done
fi
exec "$REAL_GIT" "$@"
"""


def git_wrapper(folder: Path) -> Path:
    """A folder holding the `git` wrapper above (put first on PATH by `run`)."""
    assert REAL_GIT is not None
    folder.mkdir()
    script = folder / "git"
    script.write_text(WRAPPER, encoding="utf-8")
    script.chmod(0o755)
    return folder


def run(
    config: Path, wrapper: Path | None, kill_at: str | None, root: Path
) -> subprocess.Popen[str]:
    """A heartbeat; with `wrapper` and `kill_at`, the git wrapper kills it at that point."""
    if wrapper is None or kill_at is None:
        return start(config, root)
    marker = root / "kill-marker"
    marker.write_text("", encoding="utf-8")
    return start(
        config,
        root,
        {
            "PATH": f"{wrapper}{os.pathsep}{os.environ['PATH']}",
            "REAL_GIT": str(REAL_GIT),
            "KILL_AT": kill_at,
            "KILL_MARKER": str(marker),
        },
    )
