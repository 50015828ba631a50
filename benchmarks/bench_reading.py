"""Reading benchmark: `memoryd context` and `memoryd search` on a large store, no LLM.

The store is the rewrite benchmark's (`bench_rewrite.generate`: 100,000 facts in 5,000 entities
at `--scale 1`, under `$TMPDIR/memoryd-bench/rewrite/`), reused when already there. Timed, each
the median of a few runs:

1. the context bundle of one agent, its entities ranked from the search index (as `memoryd
   context` does) and, for comparison, by reading every entity's facts;
2. the search index built from nothing (every items.json, summary, note, skill file parsed);
3. the index refreshed with nothing changed (a stat of every indexed file), which every search
   does before its query;
4. the index refreshed after one entity's items.json changed (what a heartbeat's commit costs);
5. a query (BM25 over the whole index, recency re-ranking of the best 200).

The figures go to the `## Reading` section of BENCHMARKS.md with the options that produced them.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._report import write_section
from benchmarks.bench_rewrite import DATA, ENTITIES, FACTS_PER_ENTITY, RULE, TODAY, generate
from memoryd.reading.context import MAX_ENTITIES, build_bundle
from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.search import INDEX_FILE_NAME, SearchIndex

STATE = Path(tempfile.gettempdir()) / "memoryd-bench" / "reading-state"


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks reading")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 5,000 entities")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-report", action="store_true", help="print only")
    options = parser.parse_args(argv)
    entities = max(10, int(ENTITIES * options.scale))
    load = os.getloadavg()[0]
    generate(DATA, entities)
    store = ReadOnlyStore(DATA)

    def context(*, indexed: bool) -> object:
        hottest = None
        if indexed:
            with SearchIndex.open(STATE, DATA) as index:
                index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
                hottest = index.hottest_entities(today=TODAY, rule=RULE, limit=MAX_ENTITIES)
        return build_bundle(
            store,
            agent="ops",
            routine=None,
            today=TODAY,
            rule=RULE,
            tacit_file="MEMORY.md",
            skills_dir="agents",
            hottest=hottest,
        )

    scan_ms = median_ms(lambda: context(indexed=False), options.runs)

    def refresh() -> object:
        with SearchIndex.open(STATE, DATA) as index:
            return index.refresh(tacit_file="MEMORY.md", skills_dir="agents")

    def build() -> object:
        shutil.rmtree(STATE, ignore_errors=True)
        return refresh()

    build_ms = median_ms(build, options.runs)
    unchanged_ms = median_ms(refresh, options.runs)
    items = DATA / "life" / "areas" / "people" / "person-7" / "items.json"
    original = items.read_text(encoding="utf-8")

    changed_times = []
    for _ in range(options.runs):
        items.write_text(original.replace("Fact", "Fact changed", 1), encoding="utf-8")
        started = time.perf_counter()
        refresh()
        changed_times.append((time.perf_counter() - started) * 1000)
        items.write_text(original, encoding="utf-8")
        refresh()
    changed_ms = statistics.median(changed_times)

    def query() -> object:
        with SearchIndex.open(STATE, DATA) as index:
            return index.search("person fact", today=TODAY, rule=RULE, limit=10)

    query_ms = median_ms(query, options.runs * 3)
    context_ms = median_ms(lambda: context(indexed=True), options.runs)
    size_mb = (STATE / INDEX_FILE_NAME).stat().st_size / 1e6
    facts = entities * FACTS_PER_ENTITY
    rows = [
        "| facts | entities | `context` (ranked by the index) | context ranked by reading every "
        "entity | index built | refresh, nothing changed | refresh, one items.json changed | "
        "query | index size |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {facts:,} | {entities:,} | {context_ms:,.0f} ms | {scan_ms:,.0f} ms | "
        f"{build_ms:,.0f} ms | {unchanged_ms:,.1f} ms | {changed_ms:,.1f} ms | "
        f"{query_ms:,.1f} ms | {size_mb:.1f} MB |",
    ]
    body = "\n".join(
        [
            f"Run: `python -m benchmarks reading -- --scale {options.scale:g}` on "
            f"{TODAY.isoformat()} (store date), Python {platform.python_version()}, medians of "
            f"{options.runs} runs (queries: {options.runs * 3}), {os.cpu_count()} CPUs, load "
            f"average {load:.1f} at the start (a shared machine). The store is the rewrite "
            "benchmark's, files in the page cache.",
            "",
            *rows,
            "",
            "Every `search` refreshes the index first (the stat of every indexed file, the "
            "'nothing changed' column), so a search costs that plus the query. A heartbeat's "
            "commit costs the 'one changed' column per changed file. `memoryd context` refreshes "
            "the index and ranks the entities from it (the first column, refresh included); "
            "the second column is the ranking without an index, reading every items.json. "
            "Neither calls a model or writes to the store.",
        ]
    )
    print(body)
    if not options.no_report:
        write_section("Reading", body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
