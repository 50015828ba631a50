"""Pay once: a concurrent backfill pays for each chunk about once, and a kill re-pays only the
calls in flight (issue 25, parts 1 and 2).

Two generated corpora of `--conversations` short conversations (one chunk each, one heartbeat
reads them all), two `remember:` lines each: in `shared`, every line names one of a few people
and projects that all conversations talk about (as a real fleet's do: each chunk's context
changes as the ones before it file facts); in `disjoint`, each conversation names entities of its
own. Every fact is a verb and four words drawn at random from some 90, so two facts of one entity
rarely share half their content words (what makes memoryd ask again, `heartbeat/reconcile.py`);
one conversation in ten restates a fact filed before. `dense` (`_dense_corpus.py`): the same few
entities, every fact one of a few slots of its entity with a value from a short list (updates
that supersede, restatements), so that two facts of one entity often share half their words; its
fake model answers as a strong model given the context would, and the calls asked again are
counted by reason.

`memoryd heartbeat` runs as a subprocess against the fake Anthropic server (real SDK, loopback),
answering after `--latency` seconds (0.5 and 2 by default), `llm.concurrency` 8. Measured: the
calls paid against one call at a time (a sequential run, same data), the heartbeat's own wall time
(its `duration_ms`) against the API limit (chunks x latency / concurrency), and whether the store
equals the sequential run's. Then kills: the heartbeat is SIGKILLed once `depth` calls have
reached the server (5 depths), and a second heartbeat finishes the job: calls paid again (both
runs' calls minus the chunks) against the calls in flight at the kill (sent, not answered).

`--corpora` and `--latencies` choose the backfill rows to measure, `--depths` the kills (none:
no kills); rows not measured again are kept from the saved results. `--code DIR` runs another
checkout's `src` (the before column: a checkout of the code before the pay-once work). Data
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

from benchmarks import _dense_corpus as dense
from benchmarks._payonce_report import render
from benchmarks._report import write_section
from benchmarks.bench_heartbeat import FILLER, marker_answer, write_config

BENCH = Path(tempfile.gettempdir()) / "memoryd-bench" / "payonce"
DATA = BENCH
ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 8
CORPORA = ("shared", "disjoint", "dense")
TRANSIT = 0.025  # seconds before a kill in which an answer written counts as on its way
SHARED_PEOPLE = dense.PEOPLE
SHARED_PROJECTS = dense.PROJECTS
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
    """The two `remember:` lines of conversation `index` (`shared` or `disjoint`)."""
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


def write_corpus(ws: Workspace, conversations: int, *, corpus: str) -> None:
    rng = random.Random(25)
    said: list[str] = []
    current: dict[tuple[str, str], str] = {}
    files: dict[int, list[dict[str, str]]] = {}
    for index in range(conversations):
        when = datetime(2026, 1, 1, 8, tzinfo=UTC) + timedelta(hours=index)
        if corpus == "dense":
            lines = dense.conversation_lines(rng, current)
        else:
            lines = conversation_lines(index, shared=corpus == "shared", rng=rng)
        if corpus != "dense" and said and index % 10 == 9:
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
    """The fake model: files the `remember:` lines after `latency`; keeps when each call came.

    For `shared` and `disjoint` it files every line as it is (memoryd drops a restatement of a
    filed fact when applying); for `dense` it answers as a strong model given the context would
    (`_dense_corpus.answer`: supersedes the shown fact of the same slot, leaves out what the
    context shows already) and keeps what each chunk was asked with (`asked`).
    """

    def __init__(self, latency: float, *, corpus: str = "shared") -> None:
        self.latency = latency
        self.corpus = corpus
        self.arrivals: list[float] = []
        self.asked = dense.Asked()
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ToolUse:
        with self.lock:
            self.arrivals.append(time.monotonic())
            self.asked.record(request)
        if self.corpus == "dense":
            return dense.answer(request, self.latency)
        return marker_answer(request, self.latency)


def workspace(name: str, conversations: int, *, corpus: str) -> Workspace:
    root = DATA / name
    if root.exists():
        shutil.rmtree(root)
    ws = Workspace(root)
    ws.init()
    write_corpus(ws, conversations, corpus=corpus)
    return ws


def tree(ws: Workspace) -> dict[str, str]:
    return {path: text.replace(str(ws.root), "WS") for path, text in ws.memories().items()}


def backfill(
    options: argparse.Namespace, *, corpus: str, latency: float, concurrency: int
) -> tuple[dict[str, Any], dict[str, str], set[str]]:
    """One backfill: its figures, its store, and the lines its model left out as said already."""
    ws = workspace(f"{corpus}-{latency}-{concurrency}", options.conversations, corpus=corpus)
    model = Model(latency, corpus=corpus)
    with FakeAnthropicServer(handler=model) as server:
        config = write_config(
            ws.root,
            server.base_url,
            provider="anthropic",
            llm=[f"concurrency = {concurrency}", "sections_per_call = 1"],
        )
        event = finished(heartbeat(config, options.code))
        calls = len(server.message_requests)
    chunks = int(event.get("chunks_extracted", 0)) + int(event.get("chunks_reused", 0))
    return (
        {
            "calls": calls,
            "chunks": chunks,
            "wall": int(event.get("duration_ms", 0)) / 1000,
            "outcome": event.get("outcome"),
            "asked_again": int(event.get("chunks_reextracted", 0)),
            "reasons": model.asked.reasons(),
        },
        tree(ws),
        model.asked.left_out(),
    )


def killed(options: argparse.Namespace, depth: int) -> dict[str, Any]:
    """Kill the heartbeat once `depth` calls reached the server; finish with a second one;
    `--trials` times."""
    trials = [_killed_once(options, depth) for _ in range(options.trials)]
    for trial in trials:
        print(json.dumps(trial), flush=True)
    return {"depth": depth, "trials": trials, **trials[0]}


def _killed_once(options: argparse.Namespace, depth: int) -> dict[str, Any]:
    ws = workspace(f"kill-{depth}", options.conversations, corpus="shared")
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
        # Sent and not answered at the kill, by arrival: came within the last `latency` seconds.
        in_flight = sum(1 for arrival in model.arrivals if arrival > at - latency)
        # By the server's own record: answers not written whole before the kill, and those
        # written in the TRANSIT seconds before it (on their way: the SDK had not returned them).
        written = [w for w in server.written if w <= at]
        event = finished(heartbeat(config, options.code))
        calls = len(server.message_requests)
    chunks = options.conversations
    return {
        "first_calls": first,
        "in_flight": in_flight,
        "unanswered": first - len(written),
        "in_transit": sum(1 for w in written if w > at - TRANSIT),
        "calls": calls,
        "paid_again": calls - chunks - int(event.get("chunks_reextracted", 0)),
        "asked_again": int(event.get("chunks_reextracted", 0)),
        "outcome": event.get("outcome"),
    }


def run(options: argparse.Namespace, saved: dict[str, Any] | None) -> dict[str, Any]:
    """Measure the rows asked for; the rows of `saved` (an earlier run) not measured again are
    kept, in their order, before the new ones."""
    results: dict[str, Any] = {"conversations": options.conversations, "backfill": []}
    if saved is not None and saved["conversations"] == options.conversations:
        wanted = {(c, lat) for c in options.corpora for lat in options.latencies}
        results["backfill"] = [
            r for r in saved["backfill"] if (r["corpus"], r["latency"]) not in wanted
        ]
        results["kills"] = [k for k in saved["kills"] if k["depth"] not in options.depths]
    for corpus in options.corpora:
        sequential, reference, kept_out = backfill(
            options, corpus=corpus, latency=0.0, concurrency=1
        )
        for latency in options.latencies:
            measured, stored, left_out = backfill(
                options, corpus=corpus, latency=latency, concurrency=CONCURRENCY
            )
            limit = measured["chunks"] * latency / CONCURRENCY
            row = {
                "date": datetime.now(UTC).date().isoformat(),
                "corpus": corpus,
                "latency": latency,
                "sequential_calls": sequential["calls"],
                **measured,
                "limit": limit,
                "same_store": stored == reference,
                "files_differ": sum(
                    stored.get(p) != reference.get(p) for p in {*stored, *reference}
                ),
                "active_differ": dense.active_differences(reference, stored),
                # left out as said already, on a context that no longer held when applied
                "left_out_stale": sorted(left_out - kept_out),
            }
            print(json.dumps(row), flush=True)
            results["backfill"].append(row)
    results.setdefault("kills", [])
    for depth in options.depths:
        row = killed(options, depth)
        print(json.dumps(row), flush=True)
        results["kills"].append(row)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks payonce")
    parser.add_argument("--conversations", type=int, default=120)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument("--corpora", nargs="+", choices=CORPORA, default=list(CORPORA))
    parser.add_argument(
        "--depths", type=int, nargs="*", default=[3, 10, 20, 40, 80], help="none: no kills"
    )
    parser.add_argument("--kill-latency", type=float, default=0.5)
    parser.add_argument("--trials", type=int, default=3, help="kills per depth")
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
        result = run(options, results.get(options.label))
        result.update(
            date=datetime.now(UTC).date().isoformat(),
            load=os.getloadavg()[0],
            kill_latency=options.kill_latency
            if options.depths or options.label not in results
            else results[options.label]["kill_latency"],
        )
        results[options.label] = result
        (DATA / f"result-{options.label}.json").write_text(
            json.dumps(result, indent=1), encoding="utf-8"
        )
    write_section("Pay once", render(results, CONCURRENCY))
    return 0
