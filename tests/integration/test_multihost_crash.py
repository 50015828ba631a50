"""SIGKILL of memoryd while its git child is moving the branch to a merge, then a restart.

Host c has a heartbeat the remote lacks (it was offline) and host a has pushed since, so c's next
pull merges by meaning and moves its branch. A wrapper named `git`, first on memoryd's PATH, runs
the real git and then kills memoryd with SIGKILL, after the merge commit is written, after the
branch moved (the work tree has not followed), or after the work tree followed (the index only in
part). The restarted memoryd must finish the move (never taking the stale work tree for someone's
edits), and nothing of either host may be lost.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.multihost import JANE, Host, git, model, remote_facts

pytestmark = pytest.mark.slow

REAL_GIT = shutil.which("git")
WRAPPER = """#!/bin/sh
# Test wrapper: run the real git; after the first `git $KILL_AFTER`, kill memoryd (our parent).
# Commands on the private index that builds the merge commit are not the move's: never killed.
case "$GIT_INDEX_FILE" in *memoryd-index-*) exec "$REAL_GIT" "$@";; esac
if [ -n "$KILL_MARKER" ] && [ -e "$KILL_MARKER" ] && [ "$1" = "$KILL_AFTER" ]; then
  "$REAL_GIT" "$@"; status=$?
  rm -f "$KILL_MARKER"; kill -9 "$PPID"; exit $status
fi
exec "$REAL_GIT" "$@"
"""


def config_for(host: Host) -> Path:
    path = host.ws.root / "memoryd.toml"
    path.write_text(
        f"""
[store]
path = "{host.ws.store}"
[state]
path = "{host.ws.root / "state"}"
host = "{host.name}"
[llm]
base_url = "{host.base_url}"
max_attempts = 1
[budget]
daily_usd = 0
[backfill]
since = "all"
[git]
push = true
[[agents]]
name = "ops"
  [[agents.sources]]
  format = "jsonl"
  path = "{host.ws.logs}"
""",
        encoding="utf-8",
    )
    return path


def memoryd_heartbeat(
    host: Host, wrapper: Path | None, kill_after: str = "update-ref"
) -> tuple[int, str]:
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(host.ws.root),
        "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    if wrapper is not None:
        marker = host.ws.root / "kill-marker"
        marker.write_text("", encoding="utf-8")
        environ.update(
            PATH=f"{wrapper}{os.pathsep}{os.environ['PATH']}",
            REAL_GIT=str(REAL_GIT),
            KILL_MARKER=str(marker),
            KILL_AFTER=kill_after,
        )
    command = [sys.executable, "-m", "memoryd", "--config", str(config_for(host))]
    result = subprocess.run(
        [*command, "--log-format", "json", "heartbeat"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stderr


@pytest.mark.parametrize(
    ("kill_after", "recovery"),
    [
        ("commit-tree", []),  # the merge commit exists, nothing moved: the next pull redoes it
        ("update-ref", ["finished"]),  # the branch moved, the work tree did not follow
        ("update-index", ["finished"]),  # the work tree followed, the index half did
    ],
)
def test_sigkill_while_moving_to_a_merge_loses_nothing(
    tmp_path: Path, kill_after: str, recovery: list[str]
) -> None:
    assert REAL_GIT is not None
    wrapper = tmp_path / "bin"
    wrapper.mkdir()
    (wrapper / "git").write_text(WRAPPER, encoding="utf-8")
    (wrapper / "git").chmod(0o755)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    with FakeAnthropicServer(handler=model) as server:
        a, c = (Host(n, tmp_path / n, remote, server.base_url) for n in ("a", "c"))
        a.ws.init()
        git(a.ws.store, "remote", "add", "origin", str(remote))
        git(a.ws.store, "push", "--quiet", "origin", "main")
        git(tmp_path, "clone", "--quiet", str(remote), str(c.ws.store))
        c.ws.init()

        c.offline(True)
        c.remember("2026-03-01", "person Jane Doe: Lives in Berlin")
        assert c.heartbeat() == 0  # committed locally, not pushed
        c.offline(False)
        a.remember("2026-03-02", "person Jane Doe: Joined Acme as CTO")
        assert a.heartbeat() == 0
        c.remember("2026-03-03", "person Jane Doe: Speaks French")

        status, _ = memoryd_heartbeat(c, wrapper, kill_after)
        assert status == -signal.SIGKILL
        marker = c.ws.store / ".git" / "memoryd-sync.json"
        assert marker.exists() == bool(recovery)  # killed in the middle of the move

        status, stderr = memoryd_heartbeat(c, None)
        assert status == 0, stderr
    events = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    recovered = [e for e in events if e["event"] == "git.sync_recovered"]
    assert [e["action"] for e in recovered] == recovery
    assert not marker.exists()
    assert not any(e["event"] == "store.foreign_edits_committed" for e in events)
    facts = sorted(f["fact"] for f in remote_facts(remote, JANE))
    assert facts == ["Joined Acme as CTO", "Lives in Berlin", "Speaks French"]
    assert c.ws.git("status", "--porcelain") == ""
    assert c.ws.git("rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    # The foreign-edits commit would have reverted a's fact on c: there is none.
    log = c.ws.git("log", "--format=%s").splitlines()
    assert not [s for s in log if "edits" in s.lower()]
