"""Query-length benchmark: one `memoryd search` query of 10, 100, 1,000 and 10,000 words.

An agent (or anything that reaches the MCP server) may send a query of any length; its cost
must follow a bound, not the square of its words. The store is the rewrite benchmark's
generator at a small scale (`--entities`, 200 by default) in its own folder under
`$TMPDIR/memoryd-bench/query/`, its index built once; each query's words are drawn (seeded)
from the store's own words and from words it does not have, so every word is looked up. Timed:
the query alone (the index is current), one run each, with a stop after `--limit` seconds so
that a slow length does not hold the machine (reported as "> limit").

Printed only: the figures go in a report, not in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.bench_rewrite import RULE, TODAY, generate
from memoryd.reading.search import SearchIndex

ROOT = Path(tempfile.gettempdir()) / "memoryd-bench" / "query"
LENGTHS = (10, 100, 1_000, 10_000)


def words(count: int, seed: int) -> str:
    chooser = random.Random(seed)
    vocabulary = ["person", "fact", "project", "plans", "meeting", "company", "alice", "berlin"]
    made = [
        chooser.choice(vocabulary) if chooser.random() < 0.3 else f"w{chooser.randrange(10**6)}"
        for _ in range(count)
    ]
    return " ".join(made)


def stop_at(deadline: float) -> Callable[[], int]:
    return lambda: int(time.perf_counter() > deadline)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks query")
    parser.add_argument("--entities", type=int, default=200)
    parser.add_argument("--limit", type=float, default=60.0, help="seconds before a query stops")
    options = parser.parse_args(argv)
    data, state = ROOT / "store", ROOT / "state"
    generate(data, options.entities)
    shutil.rmtree(state, ignore_errors=True)
    with SearchIndex.open(state, data) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
    load = os.getloadavg()[0]
    rows = ["| words | characters | query time | hits |", "|---|---|---|---|"]
    for length in LENGTHS:
        query = words(length, seed=length)
        with SearchIndex.open(state, data) as index:
            deadline = time.perf_counter() + options.limit
            index._db.set_progress_handler(stop_at(deadline), 10_000)  # the bench's own stop
            started = time.perf_counter()
            try:
                hits = len(index.search(query, today=TODAY, rule=RULE, limit=10))
                took = f"{(time.perf_counter() - started) * 1000:,.1f} ms"
            except sqlite3.OperationalError:
                hits, took = 0, f"> {options.limit:g} s (stopped)"
        rows.append(f"| {length:,} | {len(query):,} | {took} | {hits} |")
    print(
        f"Run: `python -m benchmarks query -- --entities {options.entities}`, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {load:.1f}."
    )
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
