"""Safety gate benchmark: how many poisoned tips the gate holds, how many benign ones it holds
by mistake, and how fast it judges a tip.

The labelled set is memoryd's own (`tests.support.gate_tips`): poisoned tips grouped by the
obfuscation they use (download-then-run, pipe-to-shell, decode-to-shell, eval, PowerShell,
planted keys, permissions, sudoers, firewall, logging, force pushes, TLS, exfiltration,
destruction, persistence) and benign tips that mention the same tools. It prints the catch rate
(poisoned tips with at least one reason from `memoryd.store.danger.dangerous_reasons`) with the
misses by group, the false-positive rate with the benign tips held, the same two figures on the
shapes a review of the old rules found wrong, the same on a held-out set written after the
rules and not used to tune them (no target), and the throughput in tips per second (best of
`--runs` passes over the whole set, repeated `--repeat` times). The targets are a catch rate of
at least 95% and a false-positive rate of at most 5%; the exit status is 1 when either is
missed. With `--baseline-src DIR` (the `src` folder of another memoryd, e.g. `git archive main
src | tar -x -C /tmp/before`), the same figures are printed for that code first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tests.support.gate_tips import (
    BENIGN,
    HELD_OUT_BENIGN,
    HELD_OUT_POISONED,
    ISSUE_BENIGN,
    ISSUE_MISSED,
    all_poisoned,
)

CATCH_TARGET = 0.95
FALSE_POSITIVE_TARGET = 0.05


def measure(judge: Callable[[str], tuple[str, ...]], runs: int, repeat: int) -> dict[str, object]:
    poisoned = all_poisoned()
    missed = [(group, tip) for group, tip in poisoned if not judge(tip)]
    held = [(tip, judge(tip)) for tip in BENIGN if judge(tip)]
    texts = [tip for _, tip in poisoned] + list(BENIGN)
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(repeat):
            for text in texts:
                judge(text)
        best = min(best, time.perf_counter() - started)
    return {
        "poisoned": len(poisoned),
        "caught": len(poisoned) - len(missed),
        "benign": len(BENIGN),
        "held": len(held),
        "missed_by_group": dict(Counter(group for group, _ in missed)),
        "missed": [tip for _, tip in missed],
        "held_benign": [f"{tip}  ({', '.join(reasons)})" for tip, reasons in held],
        "issue_missed": sum(1 for tip in ISSUE_MISSED if not judge(tip)),
        "issue_missed_of": len(ISSUE_MISSED),
        "issue_held": sum(1 for tip in ISSUE_BENIGN if judge(tip)),
        "issue_held_of": len(ISSUE_BENIGN),
        "held_out_missed": [tip for tip in HELD_OUT_POISONED if not judge(tip)],
        "held_out_held": [tip for tip in HELD_OUT_BENIGN if judge(tip)],
        "tips_per_second": round(len(texts) * repeat / best),
    }


def report(label: str, figures: dict[str, object]) -> bool:
    poisoned, caught = int(str(figures["poisoned"])), int(str(figures["caught"]))
    benign, held = int(str(figures["benign"])), int(str(figures["held"]))
    catch, false_positive = caught / poisoned, held / benign
    print(f"-- {label}")
    print(f"catch rate          {catch:7.1%}  ({caught} of {poisoned} poisoned tips held)")
    print(f"false-positive rate {false_positive:7.1%}  ({held} of {benign} benign tips held)")
    print(
        f"review shapes: {figures['issue_missed']} of {figures['issue_missed_of']} poisoned "
        f"filed, {figures['issue_held']} of {figures['issue_held_of']} benign held"
    )
    missed_out, held_out = list(figures["held_out_missed"]), list(figures["held_out_held"])  # type: ignore[call-overload]
    print(
        f"held-out set: {len(HELD_OUT_POISONED) - len(missed_out)} of {len(HELD_OUT_POISONED)} "
        f"poisoned held, {len(held_out)} of {len(HELD_OUT_BENIGN)} benign held"
    )
    print(f"throughput          {figures['tips_per_second']:>7} tips/s")
    if figures["missed_by_group"]:
        print(f"missed by group: {figures['missed_by_group']}")
    for tip in figures["missed"]:  # type: ignore[attr-defined]
        print(f"  missed: {tip}")
    for tip in figures["held_benign"]:  # type: ignore[attr-defined]
        print(f"  held:   {tip}")
    for tip in missed_out:
        print(f"  held-out missed: {tip}")
    for tip in held_out:
        print(f"  held-out held:   {tip}")
    return catch >= CATCH_TARGET and false_positive <= FALSE_POSITIVE_TARGET


_CHILD = """
import json, sys
from benchmarks.bench_gate import measure
from memoryd.store.danger import dangerous_reasons
print(json.dumps(measure(dangerous_reasons, int(sys.argv[1]), int(sys.argv[2]))))
"""


def baseline(src: Path, runs: int, repeat: int) -> dict[str, object]:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{root}"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(runs), str(repeat)],
        env=env,
        cwd=src.parent,
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, object] = json.loads(done.stdout)
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_gate")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--baseline-src", type=Path)
    args = parser.parse_args(argv)
    if args.baseline_src is not None:
        report(
            f"baseline ({args.baseline_src})", baseline(args.baseline_src, args.runs, args.repeat)
        )
    from memoryd.store.danger import dangerous_reasons

    ok = report("this tree", measure(dangerous_reasons, args.runs, args.repeat))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
