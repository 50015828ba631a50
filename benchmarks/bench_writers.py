"""Two-writers benchmark: what the store-level lock costs a writing job.

Every writing session takes, after its state folder's lock, the store's lock in the repository's
git folder (docs/cli.md, run). This measures the idle heartbeat as the daemon runs it, in one
process that has imported memoryd already (`--runs` heartbeats after one warm-up, median), on a
store of `--files` consumed transcript files and nothing new, with the `markers` provider: the
job whose fixed cost a lock would show in most. Data is built under
`$TMPDIR/memoryd-bench/writers/`. Also the store lock alone: taking and releasing it, median of
2,000 (absent before the lock existed).

To measure an older memoryd, put its `src` first on PYTHONPATH. `--label` names the figure in
the output line (`before`, `after`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.support.harness import Workspace, turn

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "writers"


def build(files: int) -> Workspace:
    if DATA.exists():
        shutil.rmtree(DATA)
    DATA.mkdir(parents=True)
    ws = Workspace(DATA)
    ws.init()
    for n in range(files):
        ws.write_log(f"t{n:03d}.jsonl", [turn("user", f"note: day {n}", "2026-03-01T09:00:00Z")])
    return ws


def idle_heartbeat_ms(ws: Workspace, runs: int) -> float:
    from memoryd.jobs.environment import Environment
    from memoryd.jobs.heartbeat import run_heartbeat
    from memoryd.jobs.lock import single_writer

    settings = ws.settings("markers")
    env = Environment.live({}, long_lived=True)
    with single_writer(DATA / "state"):
        run_heartbeat(settings, env)  # files the transcripts once
    times = []
    for _ in range(runs + 1):  # the first idle one warms the process (it is not counted)
        start = time.perf_counter()
        with single_writer(DATA / "state"):
            report = run_heartbeat(settings, env)
        times.append(time.perf_counter() - start)
        assert report.outcome == "nothing-new", report.outcome
    return statistics.median(times[1:]) * 1000


def store_lock_us(store: Path, runs: int = 2000) -> float | None:
    """The median cost of taking and releasing the store's lock; None for a memoryd without it."""
    try:
        from memoryd.jobs.lock import store_writer
    except ImportError:
        return None
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with store_writer(store):
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks writers")
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--label", default="now")
    options = parser.parse_args(argv)
    ws = build(options.files)
    median = idle_heartbeat_ms(ws, options.runs)
    lock = store_lock_us(ws.store)
    print(
        json.dumps(
            {
                "label": options.label,
                "files": options.files,
                "runs": options.runs,
                "idle_heartbeat_ms": round(median, 1),
                "store_lock_us": None if lock is None else round(lock, 1),
            }
        )
    )
    return 0
