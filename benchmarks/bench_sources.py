"""Sources benchmark: incremental reading must cost what is new, not what is old.

What it measures:
1. A history of Claude Code transcripts (2,000 files of ~250 KB, about 500 MB at `--scale 1`) is
   generated under benchmarks/.data/ and first seen with a backfill cutoff after its files'
   times, so the reader fast-forwards through it. Then 1 MB is appended across 20 of its files.
2. Reading that 1 MB incrementally (the whole source is walked and stat'ed, 20 files are read) is
   timed against reading the same 1 MB laid out as a fresh, tiny history of 20 files (same
   parsing). Target: incremental <= 2x fresh. Reads persist nothing, so each is repeated from
   the same cursors and the median is kept.
3. With `--big`, the same on a 2 GB history (8,000 files); target: flat (about the same time).
4. Peak RSS of a child process reading one 200 MB Claude Code JSONL transcript in budgeted reads
   (`resource.getrusage`). Target: under 150 MB.

The figures go to the `## Sources` section of BENCHMARKS.md with the options that produced them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks._report import write_section
from memoryd.settings import SourceSettings
from memoryd.sources.cursor import FileCursor
from memoryd.sources.reader import DEFAULT_MAX_BYTES, SourceReader

DATA = Path(__file__).resolve().parent / ".data" / "sources"
FILE_BYTES = 250_000
BASE_FILES = 2000
APPENDED_FILES = 20
APPENDED_BYTES = 1_000_000
REPEATS = 7
MB = 1_000_000
_VOCABULARY = (
    "deploy server fail2ban launch march acme jane invoice budget review schema cursor heartbeat "
    "memory agent commit rotate backup restore migrate index summary weekly report client call "
    "the a to of and in on for with that this it is was be by as at from"
)
_WORDS = _VOCABULARY.split()
_LINE = (
    '{"type":"%s","uuid":"%s","parentUuid":%s,"isSidechain":false,"userType":"external",'
    '"cwd":"/home/ops/project","sessionId":"%s","version":"2.1.0","timestamp":"%s",'
    '"message":{"role":"%s","id":"%s","content":[{"type":"text","text":"%s"}]}}\n'
)


class _Texts:
    """A fixed pool of sentences, so generation is fast and every run writes the same bytes."""

    def __init__(self, seed: int = 7) -> None:
        rng = random.Random(seed)
        self.pool = [
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(60, 160))) for _ in range(997)
        ]

    def __getitem__(self, index: int) -> str:
        return self.pool[index % len(self.pool)]


TEXTS = _Texts()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def transcript_lines(session: str, start: int, target_bytes: int) -> tuple[bytes, int]:
    """Claude Code lines for `session` from record `start` until `target_bytes`; (bytes, next)."""
    out: list[str] = []
    size = 0
    index = start
    while size < target_bytes:
        role = "user" if index % 2 == 0 else "assistant"
        parent = "null" if index == 0 else f'"{session}-{index - 1}"'
        moment = (T0 + timedelta(seconds=index * 7)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        line = _LINE % (
            role,
            f"{session}-{index}",
            parent,
            session,
            moment,
            role,
            f"msg-{session}-{index}",
            TEXTS[index + len(session)],
        )
        out.append(line)
        size += len(line)
        index += 1
    return "".join(out).encode(), index


def history_files(root: Path, files: int) -> list[Path]:
    return [root / f"project-{i % 20:02d}" / f"session-{i:05d}.jsonl" for i in range(files)]


def generate_history(root: Path, files: int, file_bytes: int) -> list[Path]:
    """Write (once) `files` transcripts of ~`file_bytes`; return their paths."""
    paths = history_files(root, files)
    marker = root / ".complete"
    if marker.exists():
        return paths
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        data, _ = transcript_lines(path.stem, 0, file_bytes)
        path.write_bytes(data)
    marker.write_text("ok\n")
    return paths


def age(paths: list[Path], when: datetime) -> None:
    for path in paths:
        os.utime(path, (when.timestamp(), when.timestamp()))


@dataclass
class HistoryFigures:
    files: int
    history_mb: float
    first_sight_s: float
    incremental_s: float
    fresh_s: float
    turns: int
    cursor_json_s: float
    idle_s: float  # a read that finds nothing new: the fixed cost of the history

    @property
    def ratio(self) -> float:
        return self.incremental_s / self.fresh_s


def median_time(action: object) -> tuple[float, object]:
    timings = []
    value: object = None
    for _ in range(REPEATS):
        start = time.perf_counter()
        value = action()  # type: ignore[operator]
        timings.append(time.perf_counter() - start)
    return statistics.median(timings), value


def measure_history(files: int, file_bytes: int = FILE_BYTES) -> HistoryFigures:
    root = DATA / f"history-{files}x{file_bytes // 1000}k"
    paths = generate_history(root, files, file_bytes)
    history_bytes = sum(path.stat().st_size for path in paths)
    now = datetime.now(UTC)  # the benchmark is an entry point: it may read the clock
    age(paths, now - timedelta(days=3))
    reader = SourceReader("bench", SourceSettings(format="claude-code", path=str(root)))
    start = time.perf_counter()
    seen = reader.read({}, since=now - timedelta(days=1), first_sight=True, max_bytes=1 << 40)
    first_sight_s = time.perf_counter() - start
    assert not seen.conversations and len(seen.cursors) == files, "history was not skipped"
    cursors = seen.cursors
    idle_s, _ = median_time(lambda: reader.read(cursors, since=None, first_sight=False))

    chosen = paths[:: max(1, files // APPENDED_FILES)][:APPENDED_FILES]
    fresh_root = DATA / f"fresh-{root.name}"
    fresh_root.mkdir(parents=True, exist_ok=True)
    for old in fresh_root.glob("*.jsonl"):
        old.unlink()
    originals = {path: path.stat().st_size for path in chosen}
    try:
        for position, path in enumerate(chosen):
            _, next_index = transcript_lines(path.stem, 0, file_bytes)
            data, _ = transcript_lines(path.stem, next_index, APPENDED_BYTES // APPENDED_FILES)
            with path.open("ab") as handle:
                handle.write(data)
            (fresh_root / f"fresh-{position:02d}.jsonl").write_bytes(data)
        fresh_source = SourceSettings(format="claude-code", path=str(fresh_root))
        fresh_reader = SourceReader("bench", fresh_source)

        def incremental() -> int:
            result = reader.read(cursors, since=None, first_sight=False)
            return sum(len(c.turns) for c in result.conversations)

        def fresh() -> int:
            result = fresh_reader.read({}, since=None, first_sight=True)
            return sum(len(c.turns) for c in result.conversations)

        incremental_s, incremental_turns = median_time(incremental)
        fresh_s, fresh_turns = median_time(fresh)
        assert incremental_turns == fresh_turns, (incremental_turns, fresh_turns)
        texts = [cursor.to_json() for cursor in cursors.values()]
        start = time.perf_counter()
        pairs = zip(cursors, texts, strict=True)
        restored = {key: FileCursor.from_json(text) for key, text in pairs}
        cursor_json_s = time.perf_counter() - start
        assert restored == cursors
    finally:
        for path, size in originals.items():
            os.truncate(path, size)
    return HistoryFigures(
        files=files,
        history_mb=history_bytes / MB,
        first_sight_s=first_sight_s,
        incremental_s=incremental_s,
        fresh_s=fresh_s,
        turns=int(incremental_turns),  # type: ignore[call-overload]
        cursor_json_s=cursor_json_s,
        idle_s=idle_s,
    )


def rss_child(path: Path) -> int:
    """In the child: read the transcript to its end in budgeted reads; print the figures."""
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    reader = SourceReader("bench", SourceSettings(format="claude-code", path=str(path)))
    start = time.perf_counter()
    result = reader.read({}, since=None, first_sight=True)
    turns = sum(len(c.turns) for c in result.conversations)
    reads = 1
    while result.more:
        result = reader.read(result.cursors, since=None, first_sight=False)
        turns += sum(len(c.turns) for c in result.conversations)
        reads += 1
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    figures = {"baseline_kb": baseline_kb, "peak_kb": peak_kb, "turns": turns, "reads": reads}
    print(json.dumps({**figures, "seconds": seconds}))
    return 0


def measure_rss(megabytes: int) -> dict[str, float]:
    path = DATA / f"transcript-{megabytes}mb" / "big-session.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            index = 0
            while handle.tell() < megabytes * MB:
                data, index = transcript_lines("big-session", index, 4 * MB)
                handle.write(data)
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_sources", "--rss-child", str(path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    figures: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    figures["file_mb"] = path.stat().st_size / MB
    return figures


def render(runs: list[HistoryFigures], rss: dict[str, float], options: argparse.Namespace) -> str:
    lines = [
        f"Run: `python -m benchmarks sources -- {' '.join(options.argv) or '(defaults)'}` on "
        f"{datetime.now(UTC):%Y-%m-%d}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        "files in the page cache. Claude Code JSONL, ~1 KB lines. Times are medians of "
        f"{REPEATS} reads from the same cursors.",
        "",
        "| history | files | first sight (fast-forward) | read with nothing new "
        "| read 1 MB appended to 20 files | read the same 1 MB fresh | ratio (target <= 2) "
        "| turns | cursor JSON round trip (all files) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        verdict = "ok" if run.ratio <= 2 else "**missed**"
        lines.append(
            f"| {run.history_mb:,.0f} MB | {run.files:,} | {run.first_sight_s * 1000:,.0f} ms | "
            f"{run.idle_s * 1000:.1f} ms | {run.incremental_s * 1000:.1f} ms | "
            f"{run.fresh_s * 1000:.1f} ms | {run.ratio:.2f} {verdict} | {run.turns:,} | "
            f"{run.cursor_json_s * 1000:.1f} ms |"
        )
    per_file_us = max(run.idle_s / run.files for run in runs) * 1e6
    lines += [
        "",
        "A read with nothing new walks the source and stats every file (no file is opened): "
        f"about {per_file_us:.1f} us per file here. That fixed cost is what the ratio measures; "
        "it grows with the number of files, not with their bytes. The issue's history is 2,000 "
        "files; the 8,000-file row (with `--big`) is beyond that target and shows the growth.",
    ]
    if len(runs) > 1:
        for run in runs[1:]:
            lines.append(
                f"\nFlatness, {run.history_mb:,.0f} MB in {run.files:,} files vs "
                f"{runs[0].history_mb:,.0f} MB in {runs[0].files:,}: the incremental read takes "
                f"{run.incremental_s / runs[0].incremental_s:.2f}x as long."
            )
    else:
        lines += [
            "",
            "The 2 GB histories (`--big`) were not run for this record: flatness unmeasured.",
        ]
    peak_mb = rss["peak_kb"] / 1024
    baseline_mb = rss["baseline_kb"] / 1024
    lines += [
        "",
        f"Peak RSS reading one {rss['file_mb']:.0f} MB transcript in a child process: "
        f"**{peak_mb:.0f} MB** (target < 150 MB; the interpreter with memoryd imported starts at "
        f"{baseline_mb:.0f} MB), {int(rss['reads'])} budgeted reads of "
        f"{DEFAULT_MAX_BYTES >> 20} MiB, {int(rss['turns']):,} turns, "
        f"{rss['file_mb'] / rss['seconds']:.0f} MB/s.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks sources --")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="history size: 1.0 = 2,000 files, ~500 MB"
    )
    parser.add_argument(
        "--big",
        action="store_true",
        help="also measure 2 GB histories: 2,000 files of 1 MB, and 8,000 files of 250 KB",
    )
    parser.add_argument("--rss-mb", type=int, default=200, help="single transcript size for RSS")
    parser.add_argument("--no-report", action="store_true", help="print only; keep BENCHMARKS.md")
    parser.add_argument("--rss-child", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    options.argv = argv
    if options.rss_child is not None:
        return rss_child(options.rss_child)
    runs = [measure_history(max(APPENDED_FILES, round(BASE_FILES * options.scale)))]
    if options.big:
        runs.append(measure_history(BASE_FILES, FILE_BYTES * 4))
        runs.append(measure_history(BASE_FILES * 4))
    rss = measure_rss(options.rss_mb)
    report = render(runs, rss, options)
    print(report)
    if not options.no_report:
        write_section("Sources", report)
    # The targets: the 2,000-file history (500 MB, and 2 GB of longer files) and RSS.
    # The 8,000-file row shows how the fixed cost grows with the file count; it is reported,
    # and marked when it misses, but it is beyond the stated target.
    targeted = [run for run in runs if run.files == runs[0].files]
    ok = all(run.ratio <= 2 for run in targeted) and rss["peak_kb"] / 1024 < 150
    ok = ok and all(run.incremental_s <= 1.5 * runs[0].incremental_s for run in targeted)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
