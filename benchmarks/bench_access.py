"""Access benchmark: which Claude Code session files the `memoryd` user can read, and what
`memoryd share` costs.

Claude Code writes every session file mode 0600. Under the system service, memoryd runs as its
own user and reads none of them until the agent's user shares them (`memoryd share`, run every
minute by `memoryd-share.timer`). What it measures, as root, with two throw-away users (an agent
and a reader standing for `memoryd`, a member of the agent's group):

1. A tree of `--files` session files owned by the agent, `--locked` of them 0600 (the rest
   0640, as a `umask 027` writer leaves them), under `--data` (outside the work tree).
2. A heartbeat-style scan as the reader: one `SourceReader.read` from no cursors, in a child
   process; files read and files skipped (permission denied), and its time.
3. `memoryd share` run as the agent (the whole command, as the timer runs it): the first run,
   which shares the locked files, and the steady state (nothing new to share), median of
   `--repeats`. Then the scan again.

On a memoryd without `share`, step 3 is reported as not available (the "before" figures).
Figures are printed, not written to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

AGENT = "mdbench-agent"
READER = "mdbench-reader"
LINE = (
    '{"type":"user","uuid":"u-%d","parentUuid":null,"sessionId":"s-%d","timestamp":'
    '"2026-03-01T10:00:00Z","message":{"role":"user","content":"deploy the server %d"}}\n'
)
SCAN = """
import json, sys, time
import structlog
structlog.configure(logger_factory=structlog.ReturnLoggerFactory())  # no log lines on stdout
from memoryd.settings import SourceSettings
from memoryd.sources.reader import SourceReader
reader = SourceReader("ops", SourceSettings(format="claude-code", path=sys.argv[1]))
started = time.perf_counter()
result = reader.read({}, since=None, first_sight=True, max_bytes=1 << 40)
elapsed = time.perf_counter() - started
denied = sum("ermission denied" in s.reason for s in result.skipped)
print(json.dumps({"read": result.stats.files_read, "denied": denied, "seconds": elapsed}))
"""

SHARE = """
import json, os, sys, time
from memoryd.sources.discovery import survey
from memoryd.sources.registry import get_format
from memoryd.sources.sharing import share_files
started = time.perf_counter()
files = survey(sys.argv[1], get_format("claude-code").accepts).files
walked = time.perf_counter()
report = share_files(sys.argv[1], files, owner=os.geteuid())
done = time.perf_counter()
print(json.dumps({"walk": walked - started, "share": done - walked, "shared": report.shared}))
"""


def _user(name: str, group: str | None = None) -> None:
    if subprocess.run(["id", name], capture_output=True, check=False).returncode != 0:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
        )
    if group is not None:
        subprocess.run(["usermod", "-aG", group, name], check=True)


def _as(user: str, *command: str) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *command],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def build_tree(projects: Path, files: int, locked: int) -> None:
    """`files` sessions in folders of 100, owned by the agent; the first `locked` are 0600."""
    if projects.exists():
        shutil.rmtree(projects)
    projects.mkdir(parents=True)
    uid, gid = int(_as(AGENT, "id", "-u").stdout), int(_as(AGENT, "id", "-g").stdout)
    for index in range(files):
        folder = projects / f"-home-ops-project-{index // 100:03d}"
        if not folder.exists():
            folder.mkdir(mode=0o755)
            os.chown(folder, uid, gid)
        session = folder / f"session-{index:05d}.jsonl"
        session.write_text(LINE % (index, index, index), encoding="utf-8")
        session.chmod(0o600 if index < locked else 0o640)
        os.chown(session, uid, gid)
    os.chown(projects, uid, gid)


def scan(projects: Path) -> dict[str, float]:
    done = _as(READER, sys.executable, "-c", SCAN, str(projects))
    if done.returncode != 0:
        raise SystemExit(f"scan failed: {done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def share(config: Path) -> tuple[float, str] | None:
    started = time.perf_counter()
    done = _as(AGENT, sys.executable, "-m", "memoryd", "--config", str(config), "share")
    elapsed = time.perf_counter() - started
    if done.returncode == 2 and "invalid choice" in done.stderr:
        return None  # this memoryd has no `share` command
    if done.returncode != 0:
        raise SystemExit(f"share failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stdout.strip()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks access")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--locked", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("/tmp/memoryd-bench-access"))  # noqa: S108 - a throw-away tree outside the work tree
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("access: skipped: needs root to create the agent and reader users")
        return 0
    _user(AGENT)
    _user(READER, group=AGENT)
    args.data.mkdir(parents=True, exist_ok=True)
    args.data.chmod(0o755)
    projects = args.data / "projects"
    build_tree(projects, args.files, args.locked)
    config = args.data / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{args.data}/store"\n[state]\npath = "{args.data}/state"\n'
        f'[llm]\nprovider = "markers"\n[[agents]]\nname = "ops"\n'
        f'  [[agents.sources]]\n  format = "claude-code"\n  path = "{projects}"\n',
        encoding="utf-8",
    )
    config.chmod(0o644)
    print(f"tree: {args.files} session files, {args.locked} of them 0600, owner {AGENT}")
    before = scan(projects)
    print(
        f"scan as the reader before share: {before['read']:.0f} files read, "
        f"{before['denied']:.0f} denied, {before['seconds']:.3f} s"
    )
    first = share(config)
    if first is None:
        print("share: not available in this memoryd")
        return 0
    print(f"share, first run (whole command): {first[0]:.3f} s: {first[1]}")
    steady = [share(config) for _ in range(args.repeats)]
    times = [run[0] for run in steady if run is not None]
    print(
        f"share, nothing new (whole command, median of {len(times)}): "
        f"{statistics.median(times):.3f} s: {steady[-1][1] if steady[-1] else ''}"
    )
    inner = _as(AGENT, sys.executable, "-c", SHARE, str(projects))
    if inner.returncode == 0:
        figures = json.loads(inner.stdout.strip().splitlines()[-1])
        print(
            f"share, nothing new, in process: walk {figures['walk']:.3f} s, "
            f"lstat and skip {figures['share']:.3f} s"
        )
    after = scan(projects)
    print(
        f"scan as the reader after share: {after['read']:.0f} files read, "
        f"{after['denied']:.0f} denied, {after['seconds']:.3f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
