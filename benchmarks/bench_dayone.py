"""Day one after a backfill: does a store filled from months of old history read as memory?

Backfills `--months` (default 6) of history of `--agents` agents (default 3), each dealing with
a new client each month and, for the first three months, a contact person, a conversation every
`--every` days (default 2), through a real heartbeat with the markers extractor (no model: each
conversation says `remember: <kind> <Name>: <fact>`). The clock is the day after the last
conversation.

Counted on the day of filing, and again 60 days later after a weekly rewrite (template mode)
with no use in between:

- summaries (`summary.md`) whose body only says nothing about the entity was used recently;
- `life/index.md` gists saying the same;
- entities each agent's `memoryd context` offers (sections included, cut or left out), and how
  many of those it includes within its budget are the agent's own (its clients and contact);
- active facts in the cold tier.

Data under `$TMPDIR/memoryd-bench/dayone/`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.harness import Workspace, turn

from memoryd.jobs.reading import agent_context
from memoryd.jobs.rewrite import run_rewrite
from memoryd.store.items import parse_items
from memoryd.store.tiers import TierRule, tier_of

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "dayone"
NOTHING = "has been used recently"
START = datetime(2026, 6, 1, 9, tzinfo=UTC)


def subject(agent: int, step: int, day: int) -> tuple[str, str]:
    """Who a conversation is about: the agent's client of the month (a new one each month), and
    in the first three months every third conversation its contact person."""
    month = day // 30
    if step % 3 == 2 and month < 3:
        return "person", f"Contact {agent}"
    return "company", f"Client {agent}m{month}"


def write_history(ws: Workspace, agents: int, days: int, every: int) -> int:
    facts = 0
    for agent in range(agents):
        rows: list[dict[str, str]] = []
        for step, day in enumerate(range(0, days, every)):
            kind, name = subject(agent, step, day)
            when = START + timedelta(days=day, minutes=agent)
            said = f"remember: {kind} {name}: Agreed step {step} of the plan on day {day}"
            session = f"a{agent}s{step}"
            rows.append({**turn("user", said, when.isoformat()), "session": session})
            reply = f"Noted for {name}."
            later = (when + timedelta(seconds=30)).isoformat()
            rows.append({**turn("assistant", reply, later), "session": session})
            facts += 1
        ws.write_log(f"agent{agent}/history.jsonl", rows)
    return facts


def measure(ws: Workspace, settings: Any, agents: int) -> dict[str, Any]:
    today = ws.now.date()
    rule = TierRule.from_settings(settings.decay)
    life = ws.store / "life"
    summaries = sorted(life.rglob("summary.md"))
    nothing = sum(1 for path in summaries if NOTHING in path.read_text(encoding="utf-8"))
    index = (life / "index.md").read_text(encoding="utf-8") if (life / "index.md").exists() else ""
    gists = [line for line in index.splitlines() if line.startswith("- [")]
    active = cold = 0
    for path in sorted(life.rglob("items.json")):
        for fact in parse_items(path, path.read_text(encoding="utf-8")):
            if fact.status == "active":
                active += 1
                cold += tier_of(fact, today, rule) == "cold"
    offered = []
    own = []
    for agent in range(agents):
        bundle = agent_context(settings, ws.environment(), agent=f"agent{agent}", record=False)
        paths = bundle.included + bundle.cut + bundle.left_out
        offered.append(sum(1 for path in paths if path.endswith("summary.md")))
        mine = (f"/client-{agent}m", f"/contact-{agent}/")
        own.append(sum(1 for path in bundle.included if any(part in path for part in mine)))
    return {
        "summaries": len(summaries),
        "summaries_nothing": nothing,
        "gists": len(gists),
        "gists_nothing": sum(1 for line in gists if NOTHING in line),
        "active_facts": active,
        "cold_facts": cold,
        "context_entities_per_agent": offered,
        "own_entities_included_per_agent": own,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_dayone")
    parser.add_argument("--months", type=int, default=6)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--every", type=int, default=2)
    args = parser.parse_args(argv)
    shutil.rmtree(DATA, ignore_errors=True)
    ws = Workspace(DATA)
    ws.init()
    days = args.months * 30
    filed = write_history(ws, args.agents, days, args.every)
    ws.now = START + timedelta(days=days + 1)
    agents = [
        {"name": f"agent{a}", "sources": [{"format": "jsonl", "path": str(ws.logs / f"agent{a}")}]}
        for a in range(args.agents)
    ]
    settings = ws.settings("markers", agents=agents)
    started = time.perf_counter()
    for _ in range(20):
        report = ws.heartbeat(settings)
        if not getattr(report, "continuing", False):
            break
    took = time.perf_counter() - started
    print(f"backfilled {filed} facts of {args.agents} agents over {days} days in {took:.1f} s")
    for label, shift in (("day of filing", 0), ("60 days later, unused", 60)):
        if shift:
            ws.now += timedelta(days=shift)
            run_rewrite(settings, ws.environment())  # the weekly rewrite, template mode
        result = measure(ws, settings, args.agents)
        print(f"{label}: {result}")
    return 0
