"""Redaction benchmark: how fast cleaning (scaffolding, unsafe characters, secrets, base64) runs.

What it measures (the redaction rules are many, so their cost is watched): the throughput of
`memoryd.sources.clean.clean_text`, line by line as the readers hand text over, on

1. a generated corpus (`--megabytes`, default 8): code, shell sessions, prose (some of it about
   passwords, PINs and keys) and JSON tool output with a planted secret every few hundred lines
   (some stated in a sentence), built in memory from a seeded generator;
2. the real transcripts beside the repository (`shared/fixtures/transcripts/real`), when
   present, read whole files as lines.

Each figure is the best of `--runs` passes (default 3). With `--baseline-src DIR` (the `src`
folder of another memoryd, e.g. `git archive main src | tar -x -C /tmp/before`), the same passes
run in a child Python whose `PYTHONPATH` is that folder, interleaved with ours, so a loaded
machine slows both alike. There is no target: the figures say what a heartbeat pays per MB of
new transcript. Results go to the `## Redaction` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks._report import write_section

REAL = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "transcripts" / "real"
_LINES = (
    "const apiKey = await getApiKeyForModel(model);",
    "  params: {{ _csrf_token: csrfToken }},",
    "def handler(event, context):  # returns {n} items",
    "$ git log --oneline | head -{n}",
    "commit {hex} fixed the flaky test",
    "The deploy pipeline needs a review before friday; we agreed to move the launch.",
    '{{"type": "tool_result", "content": "total {n}\\ndrwxr-xr-x  2 ops ops 4096 src"}}',
    "export PATH=$HOME/bin:$PATH",
    "password: {{{{ secrets.DB_PASSWORD }}}}",
    "request {hex8}-aaaa-bbbb-cccc-{hex12} failed with 503",
    "Reset your password from the settings page; the token is valid for one hour.",
    "the user admin / the key in the vault / the PIN pad and the door code are unchanged",
)
_SECRETS = (
    "DB_PASS={word}{n}!x",
    "curl -u admin:{word}{n} https://ci.example.com",
    "export GITHUB_TOKEN=ghp_{alnum36}",
    "my password is {word}{n}",
    "the office wifi password is now {word}-Kelp-{n}",
    "the PIN for the alarm is {n}",
)


def generated_lines(megabytes: float, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    lines: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        template = rng.choice(_SECRETS) if rng.random() < 0.004 else rng.choice(_LINES)
        line = template.format(
            n=rng.randrange(10_000),
            hex="".join(rng.choice("0123456789abcdef") for _ in range(40)),
            hex8="".join(rng.choice("0123456789abcdef") for _ in range(8)),
            hex12="".join(rng.choice("0123456789abcdef") for _ in range(12)),
            word=rng.choice(["hunter", "sunset", "bluebird"]),
            alnum36="".join(rng.choice(alnum) for _ in range(36)),
        )
        lines.append(line)
        size += len(line) + 1
    return lines


def real_lines() -> list[str]:
    if not REAL.is_dir():
        return []
    return [
        line
        for path in sorted(REAL.rglob("*"))
        if path.is_file() and path.name != "MANIFEST.md"
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
    ]


def measure(lines: list[str]) -> float:
    """Seconds to clean every line once."""
    from memoryd.sources.clean import clean_text

    started = time.perf_counter()
    for line in lines:
        clean_text(line)
    return time.perf_counter() - started


def _child(megabytes: float) -> int:
    """Run in the baseline's Python: one pass over each set, as JSON on stdout."""
    figures = {"generated": measure(generated_lines(megabytes)), "real": measure(real_lines())}
    print(json.dumps(figures))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks redaction")
    parser.add_argument("--megabytes", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.megabytes)
    sets = {"generated": generated_lines(args.megabytes), "real": real_lines()}
    sizes = {name: sum(len(line) + 1 for line in lines) for name, lines in sets.items()}
    ours: dict[str, list[float]] = {name: [] for name in sets}
    before: dict[str, list[float]] = {name: [] for name in sets}
    for _ in range(args.runs):
        for name, lines in sets.items():
            ours[name].append(measure(lines))
        if args.baseline_src is not None:
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_redaction",
                    "--child",
                    "--megabytes",
                    str(args.megabytes),
                ],
                env={**os.environ, "PYTHONPATH": f"{args.baseline_src}{os.pathsep}{Path.cwd()}"},
                capture_output=True,
                text=True,
                check=True,
            )
            for name, seconds in json.loads(result.stdout).items():
                before[name].append(seconds)

    def rate(name: str, timings: list[float]) -> str:
        if not timings or not sizes[name]:
            return "-"
        return f"{sizes[name] / 1e6 / min(timings):.1f} MB/s"

    rows = [
        f"| {name} ({sizes[name] / 1e6:.1f} MB) | {rate(name, before[name])} | "
        f"{rate(name, ours[name])} |"
        for name in sets
        if sizes[name]
    ]
    load = os.getloadavg()[0]
    body = (
        f"Run: `python -m benchmarks redaction -- --megabytes {args.megabytes:g} --runs "
        f"{args.runs}{' --baseline-src ' + str(args.baseline_src) if args.baseline_src else ''}`"
        f" on {datetime.now(UTC).date()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the end. Throughput of "
        "`clean_text` line by line, best of the runs. No target: it is what a heartbeat pays "
        "per MB of new transcript.\n\n"
        "| set | before (baseline) | after |\n|---|---|---|\n" + "\n".join(rows)
    )
    write_section("Redaction", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
