"""The heartbeat packs past conversation-days' texts tighter (schema version 5), and counting
over them stays the same."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from tests.support.harness import NOW, Workspace, turn

from memoryd.jobs.environment import open_state


def test_a_heartbeat_settles_past_days_and_leaves_today_packed_fast(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    settings = ws.settings("markers")
    past = [NOW - timedelta(days=days) for days in (9, 8, 7)]
    rows = [
        turn("user", f"Day {n}: Initech asked about the plan " + "and more words " * 50, at)
        for n, at in enumerate(when.isoformat() for when in [*past, NOW - timedelta(hours=1)])
    ]
    ws.write_log("a.jsonl", rows)
    ws.heartbeat(settings)
    with open_state(settings, ws.environment()) as state:
        settled = state.db.query("SELECT day, settled FROM conversation_days ORDER BY day")
        assert [(row["day"], row["settled"]) for row in settled] == [
            *[(when.date().isoformat(), 1) for when in past],
            (NOW.date().isoformat(), 0),  # today may still grow
        ]
        assert state.mentions.count_mentions(["Initech"]) == 4
        text = state.mentions.text_of("ops", "a", date(2026, 3, 1))
        assert text is not None and text.startswith("Day 0: Initech")


def test_an_idle_heartbeat_leaves_the_packing_to_heartbeats_with_work(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    settings = ws.settings("markers")
    yesterday = (NOW - timedelta(hours=12)).isoformat()
    ws.write_log("a.jsonl", [turn("user", "Initech asked about the plan", yesterday)])
    ws.heartbeat(settings)  # yesterday's day may still grow: packed fast
    ws.now = NOW + timedelta(days=3)
    idle = ws.heartbeat(settings)
    assert idle.outcome == "nothing-new"
    with open_state(settings, ws.environment()) as state:
        rows = state.db.query("SELECT settled FROM conversation_days")
        assert [row["settled"] for row in rows] == [0]  # an idle heartbeat stays idle
    ws.write_log("b.jsonl", [turn("user", "Globex too", (NOW + timedelta(days=3)).isoformat())])
    busy = ws.heartbeat(settings)
    assert busy.outcome == "ok"
    with open_state(settings, ws.environment()) as state:
        rows = state.db.query("SELECT day, settled FROM conversation_days ORDER BY day")
        assert [row["settled"] for row in rows] == [1, 0]
