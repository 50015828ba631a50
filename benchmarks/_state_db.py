"""The state database's size per MB of transcript read, for `bench_heartbeat --only db`.

Measured on data big enough for the fixed pages (each table and index holds at least one 4 KB
page) not to decide the ratio: a synthetic backfill of tens of MB (`--db-agents` x `--db-days`
conversation-days of tool-heavy JSONL whose dialogue is varied text, so that it compresses and
indexes like prose rather than like one repeated sentence), and, when they are beside the clone,
the shared real transcripts (`tests/support/shared_samples.py`, read in place, never copied).
Answers are instant (the fake Anthropic server over loopback, real SDK); the heartbeat is
repeated until nothing is left to read. Sizes are taken after a WAL checkpoint, as the database
file and as the whole state folder (the file plus its WAL and the catalogue cache), after the
backfill and again after the 14-day journal prune (the clock moved 15 days on, one idle
heartbeat); `dbstat` breaks the file down by table.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import zstandard
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.harness import Workspace, turn
from tests.support.shared_samples import SHARED_TRANSCRIPTS

from benchmarks.bench_heartbeat import DATA, TOOL_OUTPUT, folder_mb, marker_answer

REAL = SHARED_TRANSCRIPTS / "real"
# Source formats of the real samples' folders (real/<format>/...).
REAL_FORMATS = ("claude-code", "codex", "openclaw", "paperclip", "chatgpt-export", "markdown")
_SYLLABLES = [
    *("ka", "lo", "mi", "nu", "re", "sa", "ti", "vo", "an", "el", "in", "or", "us"),
    *("ber", "con", "dis", "ent", "for", "ing", "ment", "pro", "ter"),
]


def _vocabulary(size: int) -> list[str]:
    chooser = random.Random(7)  # made-up words
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(chooser.choice(_SYLLABLES) for _ in range(chooser.randint(1, 4))))
    return sorted(words)


VOCABULARY = _vocabulary(4000)
# Zipf-like weights: a few words very common, most rare, as in prose.
_WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCABULARY))]


def _prose(chooser: random.Random, words: int) -> str:
    picked = chooser.choices(VOCABULARY, weights=_WEIGHTS, k=words)
    sentences = [" ".join(picked[n : n + 12]).capitalize() + "." for n in range(0, words, 12)]
    return " ".join(sentences)


def write_synthetic(ws: Workspace, agents: int, days: int, turns: int) -> int:
    """One file per agent and day, one conversation each; return the bytes written."""
    total = 0
    for agent in range(agents):
        for day in range(days):
            chooser = random.Random(agent * 1000 + day)
            when = datetime(2026, 1, 1, 9, tzinfo=UTC) + timedelta(days=day, minutes=agent)
            rows = [
                turn(
                    "user",
                    f"remember: company Customer {agent}x{day}: Signed for {day + 1} seats",
                    when.isoformat(),
                )
            ]
            for index in range(turns):
                role = "assistant" if index % 2 else "user"
                stamp = (when + timedelta(seconds=10 * (index + 1))).isoformat()
                # About 50 words a turn: dialogue about a fifth of the bytes, as in the
                # backfill rows' conversations (and more than in the real samples).
                rows.append(turn(role, _prose(chooser, chooser.randint(10, 90)), stamp))
                if role == "assistant":  # tool-heavy, as agents' transcripts are
                    rows.append(turn("tool", f"$ make test ({index})\n" + TOOL_OUTPUT, stamp))
            rows = [{**row, "session": f"a{agent}d{day}"} for row in rows]
            total += ws.write_log(f"agent{agent}/day{day:03d}.jsonl", rows).stat().st_size
    return total


def _real_settings(ws: Workspace) -> Any:
    agents = [
        {"name": f"real-{name}", "sources": [{"format": name, "path": str(REAL / name)}]}
        for name in REAL_FORMATS
        if (REAL / name).is_dir()
    ]
    return ws.settings(agents=agents)


def _real_bytes() -> int:
    return sum(
        path.stat().st_size
        for name in REAL_FORMATS
        for path in (REAL / name).rglob("*")
        if path.is_file()
    )


def _breakdown(database: Path) -> tuple[float, dict[str, float]]:
    """The file's size after a checkpoint, and its MB by table (tables under 1% together)."""
    connection = sqlite3.connect(database, isolation_level=None)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = connection.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        page = connection.execute("PRAGMA page_size").fetchone()[0]
    finally:
        connection.close()
    size = database.stat().st_size
    tables: dict[str, float] = {}
    rest = 0.0
    for name, pages_bytes in rows:
        if pages_bytes >= size / 100:
            tables[str(name)] = pages_bytes / 1e6
        else:
            rest += pages_bytes / 1e6
    tables["(other tables and indexes)"] = rest
    tables["(free pages)"] = free * page / 1e6
    return size / 1e6, tables


def _dialogue_mb(database: Path) -> float:
    """The mention index's text: the cleaned user and assistant text of every day read."""
    connection = sqlite3.connect(database)
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(conversation_days)")}
        if "packed" not in columns:  # before schema version 5
            return float(
                connection.execute(
                    "SELECT TOTAL(length(CAST(text AS BLOB))) FROM conversation_days"
                ).fetchone()[0]
                / 1e6
            )
        unpack = zstandard.ZstdDecompressor().decompress
        bundled = 0
        if "bundle" in columns:  # schema version 7: days bundled (state/_bundles.py)
            bundled = connection.execute(
                "SELECT TOTAL(bundle_end - bundle_start) FROM conversation_days"
                " WHERE bundle IS NOT NULL"
            ).fetchone()[0]
            rows = connection.execute("SELECT packed FROM conversation_days WHERE bundle IS NULL")
        else:
            rows = connection.execute("SELECT packed FROM conversation_days")
        return (bundled + sum(len(unpack(packed)) for (packed,) in rows)) / 1e6
    finally:
        connection.close()


def _measure(ws: Workspace, settings: Any, transcript: int) -> dict[str, Any]:
    database = ws.root / "state" / "state.db"
    heartbeats = 0
    with FakeAnthropicServer(handler=lambda r: marker_answer(r, 0.0)) as server:
        for _ in range(500):
            report = ws.heartbeat(settings, server.base_url)
            heartbeats += 1
            if not getattr(report, "more_waiting", False):
                break
        calls = len(server.message_requests)
        db_mb, tables = _breakdown(database)
        figures: dict[str, Any] = {
            "transcript_mb": transcript / 1e6,
            "dialogue_mb": _dialogue_mb(database),
            "heartbeats": heartbeats,
            "calls": calls,
            "db_mb": db_mb,
            "state_mb": folder_mb(ws.root / "state"),
            "tables": tables,
        }
        ws.now = ws.now + timedelta(days=15)
        ws.heartbeat(settings, server.base_url)
    figures["db_mb_pruned"], figures["tables_pruned"] = _breakdown(database)
    figures["state_mb_pruned"] = folder_mb(ws.root / "state")
    return figures


def _workspace(name: str) -> Workspace:
    root = DATA / name
    if root.exists():
        shutil.rmtree(root)
    ws = Workspace(root)
    ws.init()
    return ws


def state_database(options: argparse.Namespace) -> dict[str, Any]:
    ws = _workspace("db-synthetic")
    written = write_synthetic(ws, options.db_agents, options.db_days, options.db_turns)
    figures: dict[str, Any] = {"synthetic": _measure(ws, ws.settings(), written)}
    if REAL.is_dir():
        ws = _workspace("db-real")
        figures["real"] = _measure(ws, _real_settings(ws), _real_bytes())
    else:
        figures["real"] = {"skipped": f"{REAL} is not beside the clone"}
    print(json.dumps(figures, indent=1))
    return figures


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db-agents", type=int, default=4)
    parser.add_argument("--db-days", type=int, default=30)
    parser.add_argument("--db-turns", type=int, default=160)


def _ratio(run: dict[str, Any], key: str) -> str:
    return f"{run[key] / run['transcript_mb']:.3f}"


def describe(run: dict[str, Any], what: str) -> str:
    """One cell: the ratios after the backfill and after the prune, and what they rest on."""
    if "skipped" in run:
        return f"{what}: not measured ({run['skipped']})"
    biggest = sorted(
        ((mb, name) for name, mb in run["tables"].items() if not name.startswith("(")),
        reverse=True,
    )[:2]
    return (
        f"{what}, {run['transcript_mb']:.1f} MB (dialogue {run['dialogue_mb']:.1f} MB): "
        f"**{_ratio(run, 'db_mb')}** MB/MB, after the "
        f"prune **{_ratio(run, 'db_mb_pruned')}** (database file; with WAL and catalogue cache "
        f"{_ratio(run, 'state_mb')} / {_ratio(run, 'state_mb_pruned')}); largest: "
        + ", ".join(f"`{name}` {mb:.2f} MB" for mb, name in biggest)
    )
