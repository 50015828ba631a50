"""The heartbeat packs past conversation-days' texts tighter (schema version 5), and counting
over them stays the same."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from tests.integration.harness import NOW, Workspace, turn

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
