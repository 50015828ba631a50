"""Input tokens sent and billed per dialogue token on short dialogue sessions.

Samples of ten short work conversations (one file each, a few turns of plain dialogue, no tool
output): of one agent all on one day, and spread over five days (as mem0's sample is); and of two
agents working the same five days, their conversations alternating (`interleaved`: each agent's
next conversation comes after one of the other's, as in a fleet). Each goes through one real
heartbeat (`tests.support.harness`) against the fake Anthropic server over
loopback through the real SDK. Everything the server received is counted: the system prompt, the
tool definition (name, description, input schema as JSON) and the messages. Tokens are
characters / 4 on both sides; the dialogue is the turns' text only.

Billed tokens follow a model of prompt caching that the fake server applies to what it receives
and reports as the API does (`usage`): the prefix memoryd marks for caching (system prompt and
tool) is written to the cache by the first call (`cache_creation_input_tokens`) and read by every
later one (`cache_read_input_tokens`), when it is at least `MIN_CACHEABLE` tokens long; the rest
is plain input. memoryd's own ledger (the heartbeat report) sums what the SDK gave it, and billed
tokens weigh it as the API prices it: input 1x, cache writes 1.25x, cache reads 0.1x.

`--label before|after` keeps each run's figures in `$TMPDIR/memoryd-bench/dialogue/<label>.json`
(`--samples` measures only those, keeping the file's other samples); the `## Short dialogue
tokens` section of BENCHMARKS.md shows both side by side. A column names the commit of the
memoryd measured (run with `PYTHONPATH=<other worktree>/src` to measure another one).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.fake_anthropic import FakeAnthropicServer, FakeUsage, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

import memoryd
from benchmarks._report import write_section
from memoryd.settings._model import LLMSettings

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "dialogue"
ROOT = Path(__file__).resolve().parent.parent
SENT_TARGET = 4.0
BILLED_TARGET = 3.0
SECTIONS = 10  # `llm.sections_per_call`, where the memoryd under test has it
# The smallest prefix the model caches (1,024 tokens on Sonnet and Opus; Haiku's is larger, and
# then nothing is cached and billed equals sent). The lower bound makes a cache write (1.25x)
# the likelier case, which is the costlier one for a heartbeat of one or two calls.
MIN_CACHEABLE = 1024
CACHE_WRITE = 1.25
CACHE_READ = 0.1
# name: days the ten conversations spread over, and the agents they alternate between.
SAMPLES: dict[str, tuple[int, tuple[str, ...]]] = {
    "one-day": (1, ("ops",)),
    "several-days": (5, ("ops",)),
    "interleaved": (5, ("ops", "dev")),
}
QUESTIONS = [
    "Can you check why the nightly export to the billing bucket failed again?",
    "Please draft a short reply to Dana about moving the vendor review to Thursday.",
    "What did we decide about the retry limit for the payments webhook?",
    "Summarise the open points of the Northwind migration for the standup.",
    "Remind me which staging host runs the new search index.",
    "Rename the quarterly report draft and share it with the finance team.",
    "Is the certificate on the status page still valid past next month?",
    "Find the ticket where Priya asked for read access to the analytics warehouse.",
    "Let's keep the release notes to five bullets from now on.",
    "Check whether the backup job on the file server finished last night.",
]
ANSWERS = [
    "I looked at the logs: the job ran out of disk on the worker, so the export stopped halfway.",
    "Done. The draft says Thursday at ten works for us and asks her to confirm the room.",
    "We settled on three retries with exponential backoff, capped at two minutes.",
    "Two points remain open: the DNS cut-over date and who signs off the data check.",
    "That is staging-2; the index was rebuilt there on Monday.",
    "Renamed to Q3 report (draft) and shared with edit rights for the finance group.",
    "It expires in six weeks; renewal is automatic through the provider.",
    "It is OPS-412, opened two weeks ago and still waiting on approval.",
    "Noted: five bullets at most for release notes.",
    "It finished at 02:14 with no errors, 38 GB copied.",
]
FOLLOW_UPS = [
    "Thanks, that helps.",
    "Good, let's leave it there for today.",
    "Okay, please keep an eye on it.",
    "Great, that is what I needed.",
]


def write_conversations(
    ws: Workspace, count: int, days: int, rng: random.Random, agents: Sequence[str] = ("ops",)
) -> int:
    """`count` short conversations spread over `days` days (the same number on each, the first
    ones earlier), of `agents` in turn (one agent's in the log folder itself, several agents'
    each in a folder of its own); return the dialogue's characters."""
    start = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
    per_day = -(-count // days)
    characters = 0
    for number in range(count):
        day, slot = divmod(number, per_day)
        when = start + timedelta(days=day, minutes=40 * slot)
        texts = []
        for step in range(4):  # four exchanges, about 145 tokens of dialogue in all
            pick = (number + 3 * step) % len(QUESTIONS)
            texts.append(("user", QUESTIONS[pick]))
            texts.append(("assistant", ANSWERS[pick]))
        texts.append(("user", rng.choice(FOLLOW_UPS)))
        rows = []
        for index, (role, text) in enumerate(texts):
            stamp = (when + timedelta(minutes=index)).isoformat()
            rows.append({**turn(role, text, stamp), "session": f"short-{number:02d}"})
            characters += len(text)
        folder = f"{agents[number % len(agents)]}/" if len(agents) > 1 else ""
        ws.write_log(f"{folder}short-{number:02d}.jsonl", rows)
    return characters


def sent_characters(request: RecordedRequest) -> dict[str, int]:
    body = request.body
    system = body.get("system", "")
    system_text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
    tools = "".join(
        tool.get("name", "") + tool.get("description", "") + json.dumps(tool.get("input_schema"))
        for tool in body.get("tools", [])
    )
    messages = json.dumps(body.get("messages", []), ensure_ascii=False)
    return {"system": len(system_text), "tools": len(tools), "messages": len(messages)}


def caching_model() -> Callable[[RecordedRequest], ToolUse]:
    """An empty answer whose usage is what the API would report under the caching model above."""
    cached: set[int] = set()

    def answer(request: RecordedRequest) -> ToolUse:
        parts = sent_characters(request)
        prefix = (parts["system"] + parts["tools"]) // 4
        total = sum(parts.values()) // 4
        marked = any("cache_control" in tool for tool in request.body.get("tools", []))
        if not marked or prefix < MIN_CACHEABLE:
            return ToolUse({}, usage=FakeUsage(input_tokens=total, output_tokens=20))
        write = 0 if prefix in cached else prefix
        cached.add(prefix)
        usage = FakeUsage(
            input_tokens=total - prefix,
            output_tokens=20,
            cache_creation_input_tokens=write,
            cache_read_input_tokens=prefix - write,
        )
        return ToolUse({}, usage=usage)

    return answer


def measure(conversations: int, days: int, agents: Sequence[str] = ("ops",)) -> dict[str, Any]:
    root = DATA / "run"
    if root.exists():
        shutil.rmtree(root)
    ws = Workspace(root)
    ws.init()
    dialogue = write_conversations(ws, conversations, days, random.Random(7), agents)
    llm: dict[str, Any] = {}
    if "sections_per_call" in LLMSettings.model_fields:
        llm["sections_per_call"] = SECTIONS
    sections: dict[str, Any] = {"llm": llm}
    if len(agents) > 1:
        sections["agents"] = [
            {"name": name, "sources": [{"format": "jsonl", "path": str(ws.logs / name)}]}
            for name in agents
        ]
    settings = ws.settings(**sections)
    with FakeAnthropicServer(handler=caching_model()) as server:
        report = ws.heartbeat(settings, server.base_url)
        requests = server.message_requests
    parts = [sent_characters(r) for r in requests]
    totals = {key: sum(p[key] for p in parts) for key in ("system", "tools", "messages")}
    sent = sum(totals.values())
    prefix = (parts[0]["system"] + parts[0]["tools"]) // 4 if parts else 0
    usage = report.usage
    billed = (
        usage.input_tokens
        + CACHE_WRITE * usage.cache_creation_input_tokens
        + CACHE_READ * usage.cache_read_input_tokens
    )
    dialogue_tokens = dialogue // 4
    return {
        "conversations": conversations,
        "days": days,
        "outcome": report.outcome,
        "calls": len(requests),
        "dialogue_tokens": dialogue_tokens,
        "sent_tokens": sent // 4,
        "prefix_tokens": prefix,
        "prefix_share": (totals["system"] + totals["tools"]) / sent if sent else 0.0,
        "per_dialogue_token": sent / dialogue if dialogue else 0.0,
        "billed_tokens": round(billed),
        "billed_per_dialogue_token": billed / dialogue_tokens if dialogue_tokens else 0.0,
        "commit": _commit(),
    }


def _commit() -> str:
    result = subprocess.run(
        ["git", "-C", str(Path(memoryd.__file__).parent), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or "?"


def render_table(results: dict[str, dict[str, Any]]) -> list[str]:
    labels = [label for label in ("before", "after") if label in results]
    header = "| measure | " + " | ".join(f"{name}: {results[name]['commit']}" for name in labels)
    rows = [header + " | target |", "|---|" + "---|" * len(labels) + "---|"]

    def row(name: str, key: str, fmt: str, target: str = "") -> None:
        cells = " | ".join(format(results[label].get(key, 0), fmt) for label in labels)
        rows.append(f"| {name} | {cells} | {target} |")

    row("model calls", "calls", "d")
    row("dialogue tokens", "dialogue_tokens", ",d")
    row("input tokens sent (everything)", "sent_tokens", ",d")
    row("fixed prefix per call (system + tool)", "prefix_tokens", ",d")
    row("prefix share of input", "prefix_share", ".0%")
    row(
        "**input tokens sent per dialogue token**", "per_dialogue_token", ".2f", f"<= {SENT_TARGET}"
    )
    row("input tokens billed (cache write 1.25x, read 0.1x)", "billed_tokens", ",d")
    row(
        "**input tokens billed per dialogue token**",
        "billed_per_dialogue_token",
        ".2f",
        f"<= {BILLED_TARGET}",
    )
    return rows


def render(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = [
        "Run: `python -m benchmarks dialogue -- --label before|after`: 10 short work "
        "conversations (9 turns each, plain dialogue), one heartbeat against the fake Anthropic "
        "server through the real SDK, for three samples: of one agent all on one day, and "
        "spread over five days (as mem0's sample is); of two agents in turn over five days "
        "(`--samples interleaved` measures that one alone). Everything the server received is "
        "counted (system prompt, tool name, description and input schema, messages); tokens are "
        "characters / 4 on both sides, the dialogue being the turns' text. Billed tokens: the "
        "fake server reports usage under a caching model (the prefix memoryd marks for caching, "
        "system prompt and tool, written by the first call and read by the later ones when it "
        f"is at least {MIN_CACHEABLE:,} tokens; below that nothing is cached and billed equals "
        "sent); memoryd's ledger sums it, weighed as priced: input 1x, cache writes 1.25x, "
        "cache reads "
        f"0.1x. Where memoryd has `llm.sections_per_call`, it is set to {SECTIONS}.",
    ]
    for sample, (days, agents) in SAMPLES.items():
        figures = {label: found[sample] for label, found in results.items() if sample in found}
        if not figures:
            continue
        title = "all on one day" if days == 1 else f"spread over {days} days"
        if len(agents) > 1:
            title += f", of {len(agents)} agents in turn ({', '.join(agents)}, ...)"
        lines += ["", f"Sample `{sample}`: ten conversations {title}.", ""]
        lines += render_table(figures)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks dialogue")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--label", default="after", choices=("before", "after"))
    parser.add_argument("--no-write", action="store_true", help="print, do not touch BENCHMARKS.md")
    parser.add_argument("--samples", nargs="+", choices=list(SAMPLES), default=list(SAMPLES))
    options = parser.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    kept = DATA / f"{options.label}.json"
    figures = json.loads(kept.read_text(encoding="utf-8")) if kept.exists() else {}
    for sample in options.samples:
        days, agents = SAMPLES[sample]
        figures[sample] = measure(options.conversations, days, agents)
    kept.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    results = {}
    for label in ("before", "after"):
        path = DATA / f"{label}.json"
        if path.exists():
            found = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(found.get("one-day"), dict):  # not a file of an earlier layout
                results[label] = found
    body = render(results)
    print(body)
    if not options.no_write:
        write_section("Short dialogue tokens", body)
    return 0
