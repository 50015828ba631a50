"""Input tokens sent per dialogue token on short dialogue sessions.

Ten short work conversations of one agent on one day (one file each, a few turns of plain
dialogue, no tool output) go through one real heartbeat (`tests.support.harness`) against the
fake Anthropic server over loopback through the real SDK. Everything the server received is
counted: the system prompt, the tool definition (name, description, input schema as JSON) and
the messages. Tokens are characters / 4 on both sides; the dialogue is the turns' text only.

`--label before|after` keeps each run's figures in `$TMPDIR/memoryd-bench/dialogue/<label>.json`;
the `## Short dialogue tokens` section of BENCHMARKS.md shows both side by side.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

from benchmarks._report import write_section
from memoryd.settings._model import LLMSettings

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "dialogue"
ROOT = Path(__file__).resolve().parent.parent
TARGET = 3.0
SECTIONS = 10  # `llm.sections_per_call`, where the memoryd under test has it
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


def write_conversations(ws: Workspace, count: int, rng: random.Random) -> int:
    """`count` short conversations of agent "ops" on one day; return the dialogue's characters."""
    start = datetime(2026, 3, 9, 8, 30, tzinfo=UTC)
    characters = 0
    for number in range(count):
        when = start + timedelta(minutes=40 * number)
        texts = []
        for step in range(4):  # four exchanges, about 190 tokens of dialogue in all
            pick = (number + 3 * step) % len(QUESTIONS)
            texts.append(("user", QUESTIONS[pick]))
            texts.append(("assistant", ANSWERS[pick]))
        texts.append(("user", rng.choice(FOLLOW_UPS)))
        rows = []
        for index, (role, text) in enumerate(texts):
            stamp = (when + timedelta(minutes=index)).isoformat()
            rows.append({**turn(role, text, stamp), "session": f"short-{number:02d}"})
            characters += len(text)
        ws.write_log(f"short-{number:02d}.jsonl", rows)
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


def measure(conversations: int) -> dict[str, Any]:
    root = DATA / "run"
    if root.exists():
        shutil.rmtree(root)
    ws = Workspace(root)
    ws.init()
    dialogue = write_conversations(ws, conversations, random.Random(7))
    llm: dict[str, Any] = {}
    if "sections_per_call" in LLMSettings.model_fields:
        llm["sections_per_call"] = SECTIONS
    settings = ws.settings(llm=llm)
    with FakeAnthropicServer(handler=lambda _r: ToolUse({})) as server:
        report = ws.heartbeat(settings, server.base_url)
        requests = server.message_requests
    parts = [sent_characters(r) for r in requests]
    totals = {key: sum(p[key] for p in parts) for key in ("system", "tools", "messages")}
    sent = sum(totals.values())
    prefix = (parts[0]["system"] + parts[0]["tools"]) // 4 if parts else 0
    return {
        "conversations": conversations,
        "outcome": report.outcome,
        "calls": len(requests),
        "dialogue_tokens": dialogue // 4,
        "sent_tokens": sent // 4,
        "prefix_tokens": prefix,
        "prefix_share": (totals["system"] + totals["tools"]) / sent if sent else 0.0,
        "per_dialogue_token": sent / dialogue if dialogue else 0.0,
        "commit": _commit(),
    }


def _commit() -> str:
    result = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or "?"


def render(results: dict[str, dict[str, Any]]) -> str:
    labels = [label for label in ("before", "after") if label in results]
    header = "| measure | " + " | ".join(f"{name}: {results[name]['commit']}" for name in labels)
    rows = [
        header + " | target |",
        "|---|" + "---|" * len(labels) + "---|",
    ]

    def row(name: str, key: str, fmt: str, target: str = "") -> None:
        cells = " | ".join(format(results[label][key], fmt) for label in labels)
        rows.append(f"| {name} | {cells} | {target} |")

    row("model calls", "calls", "d")
    row("dialogue tokens", "dialogue_tokens", ",d")
    row("input tokens sent (everything)", "sent_tokens", ",d")
    row("fixed prefix per call (system + tool)", "prefix_tokens", ",d")
    row("prefix share of input", "prefix_share", ".0%")
    row("**input tokens sent per dialogue token**", "per_dialogue_token", ".2f", f"<= {TARGET}")
    first = results[labels[0]]
    return "\n".join(
        [
            f"Run: `python -m benchmarks dialogue -- --label before|after`: "
            f"{first['conversations']} short work conversations (9 turns each, plain dialogue) "
            "of one agent on one day, one heartbeat against the fake Anthropic server through "
            "the real SDK. Everything the server received is counted (system prompt, tool name, "
            "description and input schema, messages); tokens are characters / 4 on both sides, "
            "the dialogue being the turns' text. Nothing is cached in these figures. Where "
            f"memoryd has `llm.sections_per_call`, it is set to {SECTIONS}.",
            "",
            *rows,
        ]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks dialogue")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--label", default="after", choices=("before", "after"))
    parser.add_argument("--no-write", action="store_true", help="print, do not touch BENCHMARKS.md")
    options = parser.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    figures = measure(options.conversations)
    (DATA / f"{options.label}.json").write_text(json.dumps(figures, indent=2), encoding="utf-8")
    results = {}
    for label in ("before", "after"):
        path = DATA / f"{label}.json"
        if path.exists():
            results[label] = json.loads(path.read_text(encoding="utf-8"))
    body = render(results)
    print(body)
    if not options.no_write:
        write_section("Short dialogue tokens", body)
    return 0
