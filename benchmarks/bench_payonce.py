"""Pay once: a concurrent backfill pays for each chunk about once, and a kill re-pays only the
calls in flight (issue 25, parts 1 and 2).

Two generated corpora of `--conversations` short conversations (one chunk each, one heartbeat
reads them all), two `remember:` lines each: in `shared`, every line names one of a few people
and projects that all conversations talk about (as a real fleet's do: each chunk's context
changes as the ones before it file facts); in `disjoint`, each conversation names entities of its
own. Every fact is a verb and four words drawn at random from some 90, so two facts of one entity
rarely share half their content words (what makes memoryd ask again, `heartbeat/reconcile.py`);
one conversation in ten restates a fact filed before.

`memoryd heartbeat` runs as a subprocess against the fake Anthropic server (real SDK, loopback),
answering after `--latency` seconds (0.5 and 2 by default), `llm.concurrency` 8. Measured: the
calls paid against one call at a time (a sequential run, same data), the heartbeat's own wall time
(its `duration_ms`) against the API limit (chunks x latency / concurrency), and whether the store
equals the sequential run's. Then kills: the heartbeat is SIGKILLed once `depth` calls have
reached the server (5 depths), and a second heartbeat finishes the job: calls paid again (both
runs' calls minus the chunks) against the calls in flight at the kill (sent, not answered).

`--code DIR` runs another checkout's `src` (the before column: `--code /work/main/src`). Data
under `$TMPDIR/memoryd-bench/payonce/`; results in `result-<label>.json`; `## Pay once` of
BENCHMARKS.md shows `before` and `after` side by side (`--render`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

from benchmarks._report import write_section
from benchmarks.bench_heartbeat import FILLER, marker_answer, write_config

BENCH = Path(tempfile.gettempdir()) / "memoryd-bench" / "payonce"
DATA = BENCH
ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 8
SHARED_PEOPLE = ("Dana Whitfield", "Omar Castell", "Priya Natarajan", "Lena Vogt")
SHARED_PROJECTS = ("Orion", "Bluebird", "Kestrel")
VOCABULARY = tuple(
    word
    for line in (
        "ledger invoices cluster staging rollout quota tracing canary billing search kernel",
        "cache replica sharding webhook onboarding audit payroll latency dashboard sandbox",
        "firmware badge vendor contract roadmap hiring offsite budget pager runbook migration",
        "schema gateway mentoring review backlog release hotfix archive compliance telemetry",
        "alerting tenant carpool lunch parking visa laptop monitor keyboard warranty insurance",
        "pension dentist gym marathon chess violin garden kayak sailing hiking camping bakery",
        "cinema theatre museum gallery library podcast newsletter blog conference meetup",
        "workshop hackathon mentorship internship sabbatical relocation apartment mortgage",
    )
    for word in line.split(" ")
)
VERBS = ("owns", "drafted", "approved", "paused", "reviewed", "scheduled", "cancelled", "tested")


def conversation_lines(index: int, *, shared: bool, rng: random.Random) -> list[str]:
    """The two `remember:` lines of conversation `index`."""
    if shared:
        subjects = [
            ("person", SHARED_PEOPLE[rng.randrange(len(SHARED_PEOPLE))]),
            ("project", SHARED_PROJECTS[rng.randrange(len(SHARED_PROJECTS))]),
        ]
    else:
        subjects = [("person", f"Person Number{index}"), ("project", f"Project Number{index}")]
    lines = []
    for kind, name in subjects:
        words = rng.sample(VOCABULARY, 4)
        lines.append(f"remember: {kind} {name}: {rng.choice(VERBS)} {' '.join(words)}")
    return lines


def write_corpus(ws: Workspace, conversations: int, *, shared: bool) -> None:
    rng = random.Random(25)
    said: list[str] = []
    files: dict[int, list[dict[str, str]]] = {}
    for index in range(conversations):
        when = datetime(2026, 1, 1, 8, tzinfo=UTC) + timedelta(hours=index)
        lines = conversation_lines(index, shared=shared, rng=rng)
        if said and index % 10 == 9:
            lines[0] = said[rng.randrange(len(said))]  # a restatement of a fact filed before
        said.extend(lines)
        rows = [turn("user", "\n".join(lines), when.isoformat())]
        for number in range(6):
            stamp = (when + timedelta(seconds=10 * (number + 1))).isoformat()
            role = "assistant" if number % 2 else "user"
            rows.append(turn(role, f"({number}) " + FILLER, stamp))
        files.setdefault(index % 4, []).extend({**row, "session": f"s{index}"} for row in rows)
    for agent, rows in files.items():
        ws.write_log(f"agent{agent}.jsonl", rows)


def heartbeat(config: Path, code: Path | None) -> subprocess.Popen[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORYD_", "ANTHROPIC_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    path = [str(code)] if code is not None else []
    env.update(
        ANTHROPIC_API_KEY="sk-ant-bench-0000000000",
        PYTHONPATH=os.pathsep.join([*path, str(ROOT)]),
        PYTHONPYCACHEPREFIX=str(DATA / "pycache"),
    )
    command = [sys.executable, "-m", "memoryd", "--config", str(config), "--log-format", "json"]
    return subprocess.Popen(
        [*command, "heartbeat"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> dict[str, Any]:
    """Wait for the heartbeat; its `heartbeat.finished` event (empty when killed)."""
    _out, err = process.communicate(timeout=900)
    for line in err.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "heartbeat.finished":
            return dict(event)
    return {}


class Model:
    """The fake model: files the `remember:` lines after `latency`; keeps when each call came."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ToolUse:
        with self.lock:
            self.arrivals.append(time.monotonic())
        return marker_answer(request, self.latency)


def workspace(name: str, conversations: int, *, shared: bool) -> Workspace:
    root = DATA / name
    if root.exists():
        shutil.rmtree(root)
    ws = Workspace(root)
    ws.init()
    write_corpus(ws, conversations, shared=shared)
    return ws


def tree(ws: Workspace) -> dict[str, str]:
    return {path: text.replace(str(ws.root), "WS") for path, text in ws.memories().items()}


def backfill(
    options: argparse.Namespace, *, shared: bool, latency: float, concurrency: int
) -> tuple[dict[str, Any], dict[str, str]]:
    name = f"{'shared' if shared else 'disjoint'}-{latency}-{concurrency}"
    ws = workspace(name, options.conversations, shared=shared)
    with FakeAnthropicServer(handler=Model(latency)) as server:
        config = write_config(
            ws.root,
            server.base_url,
            provider="anthropic",
            llm=[f"concurrency = {concurrency}", "sections_per_call = 1"],
        )
        event = finished(heartbeat(config, options.code))
        calls = len(server.message_requests)
    chunks = int(event.get("chunks_extracted", 0)) + int(event.get("chunks_reused", 0))
    return {
        "calls": calls,
        "chunks": chunks,
        "wall": int(event.get("duration_ms", 0)) / 1000,
        "outcome": event.get("outcome"),
    }, tree(ws)


def killed(options: argparse.Namespace, depth: int) -> dict[str, Any]:
    """Kill the heartbeat once `depth` calls reached the server; finish with a second one."""
    ws = workspace(f"kill-{depth}", options.conversations, shared=True)
    latency = options.kill_latency
    model = Model(latency)
    with FakeAnthropicServer(handler=model) as server:
        config = write_config(
            ws.root,
            server.base_url,
            provider="anthropic",
            llm=[f"concurrency = {CONCURRENCY}", "sections_per_call = 1"],
        )
        process = heartbeat(config, options.code)
        while len(model.arrivals) < depth and process.poll() is None:
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        at = time.monotonic()
        process.communicate(timeout=60)
        first = len(server.message_requests)
        # Sent and not answered at the kill: came within the last `latency` seconds.
        in_flight = sum(1 for arrival in model.arrivals if arrival > at - latency)
        event = finished(heartbeat(config, options.code))
        calls = len(server.message_requests)
    chunks = options.conversations
    return {
        "depth": depth,
        "first_calls": first,
        "in_flight": in_flight,
        "calls": calls,
        "paid_again": calls - chunks - int(event.get("chunks_reextracted", 0)),
        "asked_again": int(event.get("chunks_reextracted", 0)),
        "outcome": event.get("outcome"),
    }


def run(options: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"conversations": options.conversations, "backfill": []}
    for shared in (True, False):
        sequential, reference = backfill(options, shared=shared, latency=0.0, concurrency=1)
        for latency in options.latencies:
            measured, stored = backfill(
                options, shared=shared, latency=latency, concurrency=CONCURRENCY
            )
            limit = measured["chunks"] * latency / CONCURRENCY
            row = {
                "corpus": "shared" if shared else "disjoint",
                "latency": latency,
                "sequential_calls": sequential["calls"],
                **measured,
                "limit": limit,
                "same_store": stored == reference,
            }
            print(json.dumps(row), flush=True)
            results["backfill"].append(row)
    results["kills"] = []
    for depth in options.depths:
        row = killed(options, depth)
        print(json.dumps(row), flush=True)
        results["kills"].append(row)
    return results


def render(results: dict[str, dict[str, Any]]) -> str:
    before, after = results.get("before"), results.get("after")
    known = after or before
    assert known is not None
    lines = [
        f"Run: `python -m benchmarks payonce` on {known['date']} ({os.cpu_count()} CPUs shared "
        f"with other work; load average {known['load']:.1f} at the end of the after run). "
        f"`memoryd heartbeat` as a subprocess, `llm.concurrency` = {CONCURRENCY}, "
        "`sections_per_call` = 1, the fake Anthropic server answering after the latency over "
        f"loopback through the real SDK. {known['conversations']} short conversations, one chunk "
        "each, in one heartbeat; `shared`: every conversation names one of 4 people and one of 3 "
        "projects all conversations share; `disjoint`: entities of its own. Before = main "
        "(`--code /work/main/src`), after = this branch. Calls are counted by the server; wall "
        "is the heartbeat's own `duration_ms`; the limit is chunks x latency / concurrency.",
        "",
        "| corpus, latency | calls vs sequential: before | after | wall vs limit: before | "
        "after | store = sequential (before / after) |",
        "|---|---|---|---|---|---|",
    ]

    def backfill_row(result: dict[str, Any] | None, index: int) -> dict[str, Any] | None:
        return result["backfill"][index] if result and index < len(result["backfill"]) else None

    for index, row in enumerate(known["backfill"]):
        old, new = backfill_row(before, index), backfill_row(after, index)

        def calls(r: dict[str, Any] | None) -> str:
            if r is None:
                return "—"
            ratio = r["calls"] / max(1, r["sequential_calls"])
            return f"{r['calls']} / {r['sequential_calls']} = {ratio:.2f}x"

        def wall(r: dict[str, Any] | None) -> str:
            if r is None:
                return "—"
            return f"{r['wall']:.1f} s / {r['limit']:.1f} s = {r['wall'] / r['limit']:.2f}x"

        same = " / ".join(
            "—" if r is None else ("yes" if r["same_store"] else "no") for r in (old, new)
        )
        lines.append(
            f"| {row['corpus']}, {row['latency']} s | {calls(old)} | {calls(new)} | "
            f"{wall(old)} | {wall(new)} | {same} |"
        )
    lines += [
        "",
        "Targets (issue 25): calls <= 1.05x the sequential run, wall <= 1.5x the limit. The "
        "after runs ask again (`chunk.asked_again`) only where a fact of the answer shares half "
        "its content words with a fact of the same entity filed since it was asked; everything "
        "else is reconciled by code.",
        "",
        f"Kills (`shared` corpus, answers after {known['kill_latency']} s): the heartbeat is "
        "SIGKILLed once `depth` calls reached the server, then a second heartbeat finishes. "
        "Paid again = both runs' calls minus one per chunk minus the finishing run's "
        "`chunk.asked_again`; in flight = calls that reached the server within the latency "
        "before the kill (sent, not answered).",
        "",
        "| depth | paid again / in flight: before | after |",
        "|---|---|---|",
    ]
    for index, row in enumerate(known["kills"]):
        lines.append(f"| {row['depth']} | {_kill(before, index)} | {_kill(after, index)} |")
    return "\n".join(lines)


def _kill(result: dict[str, Any] | None, index: int) -> str:
    if result is None or index >= len(result["kills"]):
        return "—"
    k = result["kills"][index]
    return f"{k['paid_again']} / {k['in_flight']}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks payonce")
    parser.add_argument("--conversations", type=int, default=120)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 10, 20, 40, 80])
    parser.add_argument("--kill-latency", type=float, default=0.5)
    parser.add_argument("--scale", type=float, default=1.0, help="conversations x scale")
    parser.add_argument("--code", type=Path, default=None, help="another checkout's src")
    parser.add_argument("--label", choices=("before", "after"), default="after")
    parser.add_argument("--render", action="store_true", help="only rewrite the section")
    options = parser.parse_args(argv)
    options.conversations = max(10, int(options.conversations * options.scale))
    options.depths = [d for d in options.depths if d < options.conversations]
    DATA.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for label in ("before", "after"):
        saved = DATA / f"result-{label}.json"
        if saved.exists():
            results[label] = json.loads(saved.read_text(encoding="utf-8"))
    if not options.render:
        result = run(options)
        result.update(
            date=datetime.now(UTC).date().isoformat(),
            load=os.getloadavg()[0],
            kill_latency=options.kill_latency,
        )
        results[options.label] = result
        (DATA / f"result-{options.label}.json").write_text(
            json.dumps(result, indent=1), encoding="utf-8"
        )
    write_section("Pay once", render(results))
    return 0
