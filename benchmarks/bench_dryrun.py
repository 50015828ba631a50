"""The dry run's bill against what draining the backlog really took.

Data: one agent whose one transcript file holds tens of MB of tool-heavy conversations (40 MB at
`--scale 1`, written under `$TMPDIR/memoryd-bench/dryrun/`, outside the work tree): more than
one heartbeat's 16 MiB read share. `heartbeat --dry-run`'s report is made first (the code
`memoryd.jobs.heartbeat.dry_run_heartbeat` runs), then the backlog is drained by real
heartbeats, one after the other until none is left waiting, through the real SDK against the fake
Anthropic server, `claude-haiku-5-5` at its built-in price.

The fake bills each call as a model would: its input is the fake's count of the whole request
(system prompt, tool definition, context and transcript; `count_input_tokens`), its output the
answer's own size (the JSON of the tool input, 4 characters a token). No cache tokens are billed
(the fake reports none), so prompt caching, which lowers a real bill, is not measured here.

"Before" is main's dry run: the report's top-level figures, which are still computed as they
were (the next heartbeat's read share only). "After" is the report's `backlog`. A second dry run
after the first real heartbeat shows the output guess calibrated from the usage ledger, against
what the rest of the backlog cost.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_wire import FakeUsage, RecordedRequest, ToolUse, count_input_tokens
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.harness import Workspace

from benchmarks._report import write_section
from benchmarks.bench_backfill import tool_heavy
from benchmarks.bench_heartbeat import marker_answer
from memoryd.jobs.heartbeat import dry_run_heartbeat

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "dryrun"
MB_AT_SCALE_1 = 40
MODEL = "claude-haiku-5-5"


def conversation(number: int) -> list[dict[str, str]]:
    """One tool-heavy conversation of about 76 KB, one chunk, with one fact to remember; all in
    one session."""
    when = datetime(2026, 1, 1, 8, tzinfo=UTC) + timedelta(hours=3 * number)
    said = f"remember: company Customer {number}: Signed for {number % 90 + 10} seats"
    return tool_heavy(said, when, "long-session")


def write_data(ws: Workspace, megabytes: float) -> int:
    path = ws.logs / "session.jsonl"
    number = 0
    with path.open("w", encoding="utf-8") as handle:
        while handle.tell() < megabytes * 1024 * 1024:
            for row in conversation(number):
                handle.write(json.dumps(row) + "\n")
            number += 1
    return path.stat().st_size


def billed_answer(request: RecordedRequest) -> ToolUse:
    """The bench's answer, billed by its size: the request's input, the answer's JSON out."""
    answer = marker_answer(request, 0.0)
    output = math.ceil(len(json.dumps(dict(answer.input))) / 4)
    return replace(answer, usage=FakeUsage(count_input_tokens(request.body), output))


def run(options: argparse.Namespace) -> dict[str, Any]:
    shutil.rmtree(DATA, ignore_errors=True)
    ws = Workspace(DATA, now=datetime(2026, 12, 1, 12, tzinfo=UTC))
    ws.init()
    size = write_data(ws, MB_AT_SCALE_1 * options.scale)
    with FakeAnthropicServer(handler=billed_answer) as server:
        settings = ws.settings(llm={"model": MODEL, "base_url": server.base_url})
        started = time.perf_counter()
        report = dry_run_heartbeat(settings, ws.environment())
        dry_seconds = time.perf_counter() - started
        reports = []
        calibrated: dict[str, Any] | None = None
        started = time.perf_counter()
        while True:
            done = ws.heartbeat(settings, server.base_url)
            reports.append(done)
            if len(reports) == 1:
                calibrated = dry_run_heartbeat(settings, ws.environment())["backlog"]  # type: ignore[assignment]
            if not done.more_waiting or len(reports) > 100:
                break
        drain_seconds = time.perf_counter() - started
        calls = len(server.message_requests)
    backlog: dict[str, Any] = report["backlog"]  # type: ignore[assignment]
    assert calibrated is not None
    return {
        "date": datetime.now(UTC).date().isoformat(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load": round(os.getloadavg()[0], 1),
        "scale": options.scale,
        "megabytes": round(size / 1024 / 1024, 1),
        "before": {
            "chunks": report["chunks"],
            "calls": report["estimated_calls"],
            "cost_usd": report["estimated_cost_usd"],
            "input_tokens": report["estimated_input_tokens"],
        },
        "after": backlog,
        "dry_run_seconds": round(dry_seconds, 1),
        "calibrated": calibrated,
        "drain": {
            "heartbeats": len(reports),
            "chunks": sum(r.chunks_extracted for r in reports),
            "failed": sum(r.chunks_failed for r in reports),
            "calls": calls,
            "input_tokens": sum(r.usage.input_tokens for r in reports),
            "output_tokens": sum(r.usage.output_tokens for r in reports),
            "cost_usd": round(sum(r.cost_usd for r in reports), 4),
            "rest_cost_usd": round(sum(r.cost_usd for r in reports[1:]), 4),
            "rest_output_tokens": sum(r.usage.output_tokens for r in reports[1:]),
            "seconds": round(drain_seconds, 1),
        },
    }


def render(result: dict[str, Any]) -> str:
    before, after, drain, warm = (
        result["before"],
        result["after"],
        result["drain"],
        result["calibrated"],
    )
    rows = [
        ("heartbeats", "not given", after["heartbeats"], drain["heartbeats"]),
        ("chunks", before["chunks"], after["chunks"], drain["chunks"]),
        ("calls", before["calls"], after["calls"], drain["calls"]),
        ("input tokens", before["input_tokens"], after["input_tokens"], drain["input_tokens"]),
        ("output tokens", "not given", after["output_tokens"], drain["output_tokens"]),
        ("cost", _usd(before["cost_usd"]), _usd(after["cost_usd"]), _usd(drain["cost_usd"])),
        ("says if partial", "no (no such field)", "yes: " + str(after["partial"]).lower(), "-"),
    ]
    table = "\n".join(f"| {name} | {_n(b)} | {_n(a)} | {_n(d)} |" for name, b, a, d in rows)
    scale = result["scale"]
    return f"""Run: `python -m benchmarks dryrun -- --scale {scale}` on {result["date"]}, \
Python {result["python"]}, {result["cpus"]} CPUs (load average at the end: {result["load"]}). \
One agent, one transcript file of {result["megabytes"]} MB of tool-heavy conversations \
(more than one heartbeat's 16 MiB read share), `{MODEL}` at its built-in price; drained by \
real heartbeats through the real SDK against the fake Anthropic server, which bills each call's \
input as its count of the whole request and its output as the answer's JSON (4 characters a \
token), with no cache tokens. "Before" is main's dry run (the report's top-level figures, the \
next heartbeat's read share only, computed as before); "after" is its `backlog`.

| measure | before: main's dry run | after: the dry run's whole bill | draining it for real |
|---|---|---|---|
{table}

The dry run took {result["dry_run_seconds"]} s; draining took {drain["seconds"]} s \
({drain["failed"]} chunks failed). The bill's heartbeats, chunks and calls are exact: it reads \
the sources share by share as the heartbeats do. Its input tokens are \
{_ratio(after["input_tokens"], drain["input_tokens"])} the billed ones (each chunk's estimate \
plus {after["input_tokens_per_call_besides_chunks"]:,} tokens a call for prompt and context). \
Its cost, {_ratio(after["cost_usd"], drain["cost_usd"])} the real one, is off mostly by the \
output: on a first run it is {after["output_tokens_basis"]}. That guess is the budget's, kept \
generous on purpose (a ceiling should stop early rather than late); the fake's answers here are \
short (one fact a chunk, {drain["output_tokens"] / max(drain["calls"], 1):.0f} tokens a call), \
so the guess overstates them here; how long a real model's answers run was not measured (no \
real API here), which is why the ledger's own mean replaces the guess as soon as it can.

Calibrated: once the usage ledger holds heartbeat calls, their mean output stands in for the \
guess. A dry run after the first heartbeat took {warm["output_tokens_per_call"]} output tokens a \
call ({warm["output_tokens_basis"]}) and priced the rest at {_usd(warm["cost_usd"])} over \
{warm["heartbeats"]} heartbeats, {warm["chunks"]} \
chunks; the rest really cost {_usd(drain["rest_cost_usd"])} \
({drain["rest_output_tokens"]:,} output tokens): \
{_ratio(warm["cost_usd"], drain["rest_cost_usd"])}. Time: the bill says \
{after["estimated_seconds"]:,.0f} s at concurrency {after["concurrency"]} and the assumed \
{after["seconds_per_call"]:g} s a call; the fake answers at once, so the drain's time measures \
memoryd's own work, not that figure."""


def _ratio(estimate: float | None, real: float) -> str:
    return "-" if estimate is None or not real else f"{estimate / real:.2f}x"


def _usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:.4f}"


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks dryrun")
    parser.add_argument(
        "--scale", type=float, default=1.0, help=f"data size: {MB_AT_SCALE_1} MB at 1"
    )
    parser.add_argument("--render", action="store_true", help="only rewrite the section")
    options = parser.parse_args(argv)
    saved = Path(tempfile.gettempdir()) / "memoryd-bench" / "dryrun-result.json"
    if options.render:
        result = json.loads(saved.read_text(encoding="utf-8"))
    else:
        result = run(options)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(result, indent=1), encoding="utf-8")
        print(json.dumps(result, indent=1))
    write_section("Dry run", render(result))
    return 0 if result["drain"]["failed"] == 0 else 1
