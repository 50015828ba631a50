"""Does every current model work? A heartbeat and `memoryd check --online` per 5.x model.

For each model, through the fake Anthropic server (which refuses a forced tool choice for the
models the real API refuses it for, with the real API's 400):

1. a heartbeat over a small backfill (one conversation a day, each with `remember:` lines the
   fake model files): chunks sent, chunks filed, facts filed, paid calls (answers the server
   gave with a 200; a refused request is not billed) and the outcome;
2. `memoryd check --online` (a subprocess, as an operator runs it) against a server whose model
   answers text only, never through the tool: whether the check catches it (non-zero exit).

Data is built under the system's temporary folder, outside the work tree. Figures are printed,
not written to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import structlog
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, Text, ToolUse
from tests.support.harness import Workspace, turn

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "models"
ROOT = Path(__file__).resolve().parent.parent
MODELS = (
    "claude-haiku-5-5",
    "claude-sonnet-5-5",
    "claude-opus-5-5",
    "claude-fable-5-1",
    "claude-fable-5-2",
    "claude-mythos-5-1",
    "claude-mythos-5-2",
)
_REMEMBER = re.compile(r"^remember: (\w+) ([^:\n]+): (.+)$", re.MULTILINE)


def _user_text(request: RecordedRequest) -> str:
    content = request.body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


class FakeModel:
    """Files the `remember:` lines of the request as facts; counts the answers it gave."""

    def __init__(self) -> None:
        self.answered = 0

    def __call__(self, request: RecordedRequest) -> ToolUse:
        self.answered += 1
        facts: list[dict[str, Any]] = []
        entities: list[dict[str, Any]] = []
        for kind, name, fact in _REMEMBER.findall(_user_text(request)):
            facts.append(
                {"entity": {"name": name, "kind": kind}, "fact": fact, "category": "status"}
            )
            entities.append({"name": name, "kind": kind, "significant": True})
        return ToolUse({"facts": facts, "entities": entities})


def write_backfill(ws: Workspace, days: int) -> None:
    rows = []
    for day in range(days):
        when = datetime(2026, 3, 1, 9, tzinfo=UTC) + timedelta(days=day)
        text = f"remember: company Customer {day}: Signed for {day + 1} seats"
        rows.append({**turn("user", text, when.isoformat()), "session": f"d{day}"})
        reply = turn("assistant", "Noted.", (when + timedelta(minutes=1)).isoformat())
        rows.append({**reply, "session": f"d{day}"})
    ws.write_log("ops.jsonl", rows)


def heartbeat(model: str, days: int) -> dict[str, Any]:
    root = DATA / f"heartbeat-{model}"
    if root.exists():
        shutil.rmtree(root)
    ws = Workspace(root)
    ws.init()
    write_backfill(ws, days)
    settings = ws.settings(llm={"model": model, "rewrite_model": model})
    fake = FakeModel()
    with FakeAnthropicServer(handler=fake) as server:
        report = ws.heartbeat(settings, server.base_url)
        requests = len(server.message_requests)
    facts = sum(
        len(ws.facts(str(p.parent.relative_to(ws.store)))) for p in ws.store.rglob("items.json")
    )
    return {
        "model": model,
        "chunks": report.chunks,
        "filed": report.chunks_extracted,
        "failed": report.chunks_failed,
        "facts": facts,
        "requests": requests,
        "paid": fake.answered,
        "outcome": report.outcome,
    }


def check_online(model: str) -> dict[str, Any]:
    root = DATA / f"check-{model}"
    if root.exists():
        shutil.rmtree(root)
    (root / "logs").mkdir(parents=True)
    with FakeAnthropicServer(default=Text("Here is what I would record: nothing.")) as server:
        config = root / "memoryd.toml"
        config.write_text(
            "\n".join(
                [
                    "[store]",
                    f'path = "{root / "store"}"',
                    "[state]",
                    f'path = "{root / "state"}"',
                    "[llm]",
                    'provider = "anthropic"',
                    f'base_url = "{server.base_url}"',
                    f'model = "{model}"',
                    f'rewrite_model = "{model}"',
                    "[budget]",
                    "daily_usd = 0",
                    "[[agents]]",
                    'name = "ops"',
                    "[[agents.sources]]",
                    'format = "jsonl"',
                    f'path = "{root / "logs"}"',
                    "",
                ]
            ),
            encoding="utf-8",
        )
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            "MEMORYD_CONFIG": str(config),
            "ANTHROPIC_API_KEY": "sk-ant-bench-0000000000",
        }
        result = subprocess.run(
            [sys.executable, "-m", "memoryd", "check", "--online"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    return {"model": model, "exit": result.returncode, "caught": result.returncode != 0}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks models")
    parser.add_argument("--days", type=int, default=4, help="conversations (one a day)")
    options = parser.parse_args(argv)
    # The table is the output; the heartbeats' own log lines would bury it.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    print(
        "| model | chunks filed / sent | facts | requests | paid calls | outcome "
        "| check --online catches a text-only model |"
    )
    print("|---|---|---|---|---|---|---|")
    for model in MODELS:
        beat = heartbeat(model, options.days)
        check = check_online(model)
        caught = f"yes (exit {check['exit']})" if check["caught"] else "no (exit 0)"
        print(
            f"| {model} | {beat['filed']} / {beat['chunks']} | {beat['facts']} | "
            f"{beat['requests']} | {beat['paid']} | {beat['outcome']} | {caught} |",
            flush=True,
        )
    return 0
