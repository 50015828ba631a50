"""`memoryd status` and `memoryd retry` over a real store, state database and transcripts."""

from __future__ import annotations

import argparse
import io
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from tests.support.harness import NOW, Workspace, turn

from memoryd.cli.status import cmd_retry, cmd_status
from memoryd.daemon.status import collect_status, render_status
from memoryd.jobs.environment import open_state
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.jobs.lock import single_writer
from memoryd.llm.prices import Usage
from memoryd.settings import LoadedConfig, Settings


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def markers(ws: Workspace) -> Settings:
    return ws.settings("markers", budget={"daily_usd": 2.5})


def test_status_before_anything_ran_needs_no_state_database(ws: Workspace) -> None:
    settings = markers(ws)
    ws.write_log("a.jsonl", [turn("user", "hello", "2026-03-01T09:00:00Z")])
    report = collect_status(settings, ws.environment())
    assert report["last_heartbeat"] is None
    assert report["next_runs"]["heartbeat"] is None
    assert report["next_runs"]["rewrite_catch_up_at_start"] is True
    assert report["sources"][0]["lag_bytes"] == (ws.logs / "a.jsonl").stat().st_size
    assert not (ws.root / "state").exists()  # status created nothing


def test_status_reports_the_last_heartbeat_lag_spend_and_pending(ws: Workspace) -> None:
    settings = markers(ws)
    ws.write_log(
        "a.jsonl",
        [turn("user", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z")],
    )
    report = run_heartbeat(settings, ws.environment())
    with open_state(settings, ws.environment()) as state:
        state.usage.record(
            at=NOW - timedelta(hours=1),
            model="m",
            usage=Usage(10, 5),
            cost_usd=1.25,
            job="heartbeat",
        )
        state.usage.record(
            at=NOW - timedelta(days=1), model="m", usage=Usage(1, 1), cost_usd=9, job="heartbeat"
        )
    appended = ws.write_log(
        "a.jsonl", [turn("user", "not read yet", "2026-03-02T09:00:00Z")], append=True
    )

    status = collect_status(settings, ws.environment())
    last = status["last_heartbeat"]
    assert last["commit"] == report.commit
    assert last["outcome"] == "ok"
    assert last["counters"]["facts_added"] == 1
    assert status["next_runs"]["heartbeat"] == (NOW + timedelta(minutes=30)).isoformat()
    assert status["next_runs"]["rewrite"] == "2026-03-15T03:00:00+00:00"  # the next Sunday
    assert status["spend_today"] == {
        "day": "2026-03-10",
        "usd": 1.25,
        "calls": 1,
        "budget_usd": 2.5,
        "exhausted": False,
    }
    source = status["sources"][0]
    line = json.dumps(turn("user", "not read yet", "2026-03-02T09:00:00Z")) + "\n"
    assert source["lag_bytes"] == len(line.encode())
    assert source["lagging_files"] == {str(appended): len(line.encode())}
    assert status["quarantined"] == []
    assert status["lock_holder_pid"] is None

    text = render_status(status)
    assert report.commit is not None
    assert f"ok, commit {report.commit[:12]}, +1 fact, 1 entity, $0.0000" in text
    assert "spend today (2026-03-10 UTC): $1.2500 of $2.50" in text
    # The same state and clock give the same bytes.
    assert json.dumps(status, sort_keys=True) == json.dumps(
        collect_status(settings, ws.environment()), sort_keys=True
    )


def test_status_never_takes_the_lock_and_names_its_holder(ws: Workspace) -> None:
    settings = markers(ws)
    with single_writer(ws.root / "state"):
        report = collect_status(settings, ws.environment())
    assert report["lock_holder_pid"] == os.getpid()


def quarantine_one(ws: Workspace, settings: Settings) -> None:
    with open_state(settings, ws.environment()) as state:
        for run in ("r1", "r2", "r3"):
            state.failures.record_failure(
                "ops:s:2026-03-01:0",
                run_id=run,
                error="invalid answer twice",
                plan_json='{"files": []}',
                at=NOW,
            )


def test_retry_requeues_what_status_lists_as_quarantined(ws: Workspace, tmp_path: Path) -> None:
    settings = markers(ws)
    quarantine_one(ws, settings)
    config = LoadedConfig(tmp_path / "memoryd.toml", settings)

    out = io.StringIO()
    assert cmd_status(argparse.Namespace(json=True), config, {}, out) == 0
    listed = json.loads(out.getvalue())["quarantined"]
    assert [item["chunk_key"] for item in listed] == ["ops:s:2026-03-01:0"]
    assert listed[0]["last_error"] == "invalid answer twice"

    out = io.StringIO()
    assert cmd_retry(argparse.Namespace(), config, {}, out) == 0
    assert out.getvalue() == "requeued 1 quarantined chunk\n"
    with open_state(settings, ws.environment()) as state:
        assert state.failures.quarantined() == []
        assert [r.chunk_key for r in state.failures.requeued()] == ["ops:s:2026-03-01:0"]


def test_only_runs_not_superseded_by_a_finished_one_are_listed_as_unfinished(
    ws: Workspace,
) -> None:
    settings = markers(ws)
    with open_state(settings, ws.environment()) as state:
        state.runs.start("killed-long-ago", "heartbeat", NOW - timedelta(hours=2))
        state.runs.start("finished", "heartbeat", NOW - timedelta(hours=1))
        state.runs.finish("finished", finished_at=NOW - timedelta(minutes=59), outcome="ok")
        state.runs.start("running-now", "heartbeat", NOW - timedelta(minutes=1))
    report = collect_status(settings, ws.environment())
    assert [run["run_id"] for run in report["unfinished_runs"]] == ["running-now"]
    assert "unfinished: heartbeat running-now" in render_status(report)


def test_runs_are_compared_by_the_order_they_were_recorded_in_not_their_clock(
    ws: Workspace,
) -> None:
    settings = markers(ws)
    with open_state(settings, ws.environment()) as state:
        # Recorded first, stamped in the future (a clock that was fast), then killed.
        state.runs.start("killed-fast-clock", "heartbeat", NOW + timedelta(hours=5))
        state.runs.start("finished", "heartbeat", NOW - timedelta(hours=1))
        state.runs.finish("finished", finished_at=NOW - timedelta(minutes=59), outcome="ok")
        # Recorded after the finished run, with a clock set back.
        state.runs.start("running-slow-clock", "heartbeat", NOW - timedelta(hours=3))
    report = collect_status(settings, ws.environment())
    assert [run["run_id"] for run in report["unfinished_runs"]] == ["running-slow-clock"]


def stopped_for_budget(ws: Workspace, settings: Settings, *, cost: float, hours_ago: float) -> None:
    with open_state(settings, ws.environment()) as state:
        state.usage.record(
            at=NOW - timedelta(hours=1), model="m", usage=Usage(10, 5), cost_usd=2, job="heartbeat"
        )
        started = NOW - timedelta(hours=hours_ago)
        state.runs.start("stopped", "heartbeat", started)
        state.runs.finish(
            "stopped",
            finished_at=started + timedelta(minutes=1),
            outcome="stopped",
            counters={"stop_reason": "budget", "cost_usd": cost, "facts_added": 0},
        )


def test_a_heartbeat_stopped_by_the_daily_budget_today_shows_it_exhausted(ws: Workspace) -> None:
    settings = markers(ws)  # $2.50 a day, $2 spent: the next chunk's estimate did not fit
    stopped_for_budget(ws, settings, cost=0.0, hours_ago=1)
    report = collect_status(settings, ws.environment())
    assert report["spend_today"]["exhausted"] is True
    text = render_status(report)
    assert "stopped early: budget" in text
    assert "budget exhausted" in text


def test_a_budget_stop_yesterday_does_not_exhaust_today(ws: Workspace) -> None:
    settings = markers(ws)
    stopped_for_budget(ws, settings, cost=0.0, hours_ago=13)  # 23:00 UTC yesterday
    assert collect_status(settings, ws.environment())["spend_today"]["exhausted"] is False


def test_a_stop_the_per_heartbeat_ceiling_explains_does_not_exhaust_the_day(
    ws: Workspace,
) -> None:
    # $0.10 of a $0.20 share spent, $0.50 left of the day: the share may have stopped it.
    settings = ws.settings("markers", budget={"daily_usd": 2.5, "heartbeat_usd": 0.2})
    stopped_for_budget(ws, settings, cost=0.1, hours_ago=1)
    assert collect_status(settings, ws.environment())["spend_today"]["exhausted"] is False
    # $1.90 left of a $2 share, $0.50 of the day: whatever the share refused, the day did first.
    settings = ws.settings("markers", budget={"daily_usd": 2.5, "heartbeat_usd": 2})
    assert collect_status(settings, ws.environment())["spend_today"]["exhausted"] is True
