"""Run benchmarks: `python -m benchmarks [NAME ...] [-- OPTIONS ...]`.

Each `benchmarks/bench_<name>.py` exposes `main(argv) -> int`. With no names, every benchmark
runs; OPTIONS after `--` are passed to each one (e.g. `python -m benchmarks sources -- --scale
0.05`). The exit status is the first non-zero status a benchmark returned.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def available() -> list[str]:
    folder = Path(__file__).resolve().parent
    return sorted(path.stem.removeprefix("bench_") for path in folder.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    names, options = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    known = available()
    unknown = [name for name in names if name not in known]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    status = 0
    for name in names or known:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"== {name}", flush=True)
        result = int(module.main(options))
        status = status or result
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
