"""Git-operation benchmark: what memoryd's checks before each git command cost.

Every store operation (`GitStore.status`, `GitStore.commit`, ...) opens the repository afresh;
since the hostile-stores work it also checks who owns the repository (three `stat` calls) and
reads the configuration files for filter, diff and merge drivers to switch off. This measures,
on a store of `--files` files built in a temporary folder outside the work tree, the median
wall time of `--runs` rounds of one `status` and one one-file `commit`, and of the
foreign-edits step on a clean store (the first thing every heartbeat does). Run it with the
code of the commit before the change (`PYTHONPATH=<that source> python -m benchmarks gitops`)
for the figure before.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.logs import configure_logging
from memoryd.worktree import UnitOfWork


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks gitops")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args(argv)
    configure_logging("auto", "warning")
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-gitops-") as folder:
        root = Path(folder) / "store"
        git = GitStore(root, GitIdentity("bench", "bench@localhost"), None)
        git.init()
        for index in range(options.files):
            path = root / "life" / f"e{index % 200:03d}" / f"f{index}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"fact {index}\n", encoding="utf-8")
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
        git.commit(["life"], "seed")
        status, commit, foreign = [], [], []
        for run in range(options.runs):
            started = time.perf_counter()
            git.status()
            status.append(time.perf_counter() - started)
            (root / "life" / "e000" / "f0.md").write_text(f"fact 0 run {run}\n", encoding="utf-8")
            started = time.perf_counter()
            git.commit(["life/e000/f0.md"], f"run {run}")
            commit.append(time.perf_counter() - started)
            started = time.perf_counter()
            UnitOfWork(git).commit_foreign_edits(lambda _text: [])
            foreign.append(time.perf_counter() - started)
    print(
        f"store of {options.files} files, median of {options.runs}: "
        f"status {_median_ms(status):.1f} ms, one-file commit {_median_ms(commit):.1f} ms, "
        f"foreign-edits step {_median_ms(foreign):.1f} ms"
    )
    return 0
