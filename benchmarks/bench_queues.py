"""Queue benchmark: what appending to and claiming the read and remember queues costs.

Readers append to `queue/reads.jsonl` on every `search`/`context`, agents append to their
remembered queue on every `remember`, and each heartbeat claims the read queue. Checking that
each of these is a regular file of memoryd's own (no symlink, FIFO or device on the way) adds
system calls to each; this measures them. In a temporary state directory (outside the work
tree), it times `--appends` calls of `record_reads` (5 facts each), a `claim_reads` of what they
queued, and `--memories` calls of `queue_memory` (spread over days so no daily cap is reached).
Figures are printed, not written to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memoryd.reading.accesses import claim_reads, record_reads
from memoryd.reading.remember import queue_memory


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_queues")
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--memories", type=int, default=1000)
    options, _ = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-queues-") as tmp:
        state = Path(tmp) / "state"
        day = date(2026, 3, 1)
        start = time.perf_counter()
        for number in range(options.appends):
            ids = [f"acme-{number * 5 + offset:03d}" for offset in range(5)]
            record_reads(state, ids, agent="bench", day=day)
        append = time.perf_counter() - start
        start = time.perf_counter()
        claimed = claim_reads(state)
        claim = time.perf_counter() - start
        start = time.perf_counter()
        first = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
        for number in range(options.memories):
            at = first + timedelta(days=number // 50, seconds=number)
            queue_memory(
                state,
                agent="bench",
                text=f"the deploy runs at {number}",
                entity=None,
                kind=None,
                at=at,
            )
        remember = time.perf_counter() - start
    print(f"record_reads: {options.appends} calls, {append / options.appends * 1e6:.1f} us/call")
    print(f"claim_reads: {len(claimed.reads)} reads in {claim * 1000:.1f} ms")
    print(
        f"queue_memory: {options.memories} calls, {remember / options.memories * 1e6:.1f} us/call"
    )
    return 0
