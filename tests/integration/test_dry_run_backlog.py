"""`heartbeat --dry-run`'s whole bill (`memoryd.heartbeat.dryrun`): a backlog that takes several
heartbeats is predicted heartbeat for heartbeat, then drained by real heartbeats through the real
SDK against the fake Anthropic server, and the two are compared."""

from __future__ import annotations

import io
import json
import math
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer, ToolUse
from tests.support.cli import memoryd, write_config
from tests.support.harness import Workspace, turn

from memoryd.cli.bill import print_bill
from memoryd.errors import EXIT_OK, EXIT_USAGE
from memoryd.extractors.extract import MarkersExtractor
from memoryd.heartbeat import Heartbeat, whole_backlog
from memoryd.jobs.environment import open_state
from memoryd.jobs.heartbeat import build_heartbeat, dry_run_heartbeat
from memoryd.jobs.parts import make_scrubber
from memoryd.jobs.reconcile import reconcile_state
from memoryd.settings import Settings

SHARE = 6_000  # bytes of each source one heartbeat reads in these tests
PARAGRAPH = "We moved the nightly export of the billing tables to the new runner. " * 12


def conversation(day: int, subject: str) -> list[dict[str, str]]:
    """One conversation of about 2 kB (one chunk): a question and an answer on one day."""
    when = f"2026-03-{day:02d}T09:00:00Z"
    return [
        turn("user", f"{subject} on day {day}: {PARAGRAPH}", when),
        turn("assistant", f"Noted about {subject}. {PARAGRAPH}", when.replace("09:00", "09:05")),
    ]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    for day in range(1, 8):  # ops: 7 conversations in one file, more than one share
        workspace.write_log("ops/main.jsonl", conversation(day, "billing"), append=True)
    for day in range(1, 4):  # ops's second source: 3 in small files of their own
        workspace.write_log(f"ops-extra/s{day}.jsonl", conversation(day, "runner"))
    for day in range(2, 6):  # dev: 4 in one file
        workspace.write_log("dev/dev.jsonl", conversation(day, "deploys"), append=True)
    return workspace


def settings_of(ws: Workspace, **llm: Any) -> Settings:
    agents = [
        {
            "name": "ops",
            "sources": [
                {"format": "jsonl", "path": str(ws.logs / "ops")},
                {"format": "jsonl", "path": str(ws.logs / "ops-extra")},
            ],
        },
        {"name": "dev", "sources": [{"format": "jsonl", "path": str(ws.logs / "dev")}]},
    ]
    # Ten conversations may share a call (the default; the test harness sets one per call).
    return ws.settings(
        llm={"model": "claude-haiku-5-5", "sections_per_call": 10, **llm}, agents=agents
    )


def with_share(heartbeat: Heartbeat) -> Heartbeat:
    heartbeat.settings = replace(heartbeat.settings, read_share=SHARE)
    return heartbeat


def bill(ws: Workspace, settings: Settings, **options: Any) -> dict[str, Any]:
    """The whole bill, as `heartbeat --dry-run` makes it, with this test's read share."""
    env = ws.environment()
    with open_state(settings, env) as state:
        extractor = MarkersExtractor(make_scrubber(settings))
        heartbeat = with_share(build_heartbeat(settings, env, state, extractor, dry_run=True))
        asks = settings.llm.provider != "markers"
        return whole_backlog(heartbeat, asks_a_model=asks, shares_calls=asks, **options)


def drain(ws: Workspace, settings: Settings, base_url: str | None) -> tuple[int, int]:
    """Run real heartbeats until nothing is left waiting: (heartbeats, chunks extracted)."""
    heartbeats = chunks = 0
    env = ws.environment()
    while True:
        with (
            open_state(settings, env, discard_corrupt=True) as state,
            ws.extractor(settings, base_url) as extractor,
        ):
            heartbeat = with_share(build_heartbeat(settings, env, state, extractor))
            reconcile_state(state, heartbeat.git, heartbeat.settings.host, env.clock())
            report = heartbeat.run()
        heartbeats += 1
        chunks += report.chunks_extracted
        assert report.chunks_failed == 0
        if not report.more_waiting:
            return heartbeats, chunks
        assert heartbeats < 50, "the backlog never drained"


def test_the_bill_predicts_every_heartbeat_and_call_that_draining_takes(ws: Workspace) -> None:
    # Three conversations a call at most: enough calls for the ledger to calibrate the output.
    settings = settings_of(ws, sections_per_call=3)
    predicted = bill(ws, settings, seconds_per_call=2.0)
    again = bill(ws, settings, seconds_per_call=2.0)
    assert again == predicted  # the dry run moved no read position

    with FakeAnthropicServer(default=ToolUse({})) as server:
        heartbeats, chunks = drain(ws, settings, server.base_url)
        calls = len(server.message_requests)

    assert heartbeats > 2  # the backlog takes several read shares
    assert predicted["heartbeats"] == heartbeats
    assert predicted["heartbeats_limited_by"] == ["read_share"]
    assert predicted["chunks"] == predicted["chunks_to_send"] == chunks == 16
    # Calls are shared across days, and across the other agent's conversations between them;
    # a conversation a share cuts takes a second call.
    assert predicted["calls"] == calls == 8
    assert predicted["partial"] is False and predicted["partial_reasons"] == []
    # Figures per agent and per source, adding up to the whole.
    assert {name: a["chunks"] for name, a in predicted["by_agent"].items()} == {"dev": 5, "ops": 11}
    by_source = {Path(key).name: s["chunks"] for key, s in predicted["by_source"].items()}
    assert by_source == {"ops": 8, "ops-extra": 3, "dev": 5}
    assert {s["agent"] for s in predicted["by_source"].values()} == {"ops", "dev"}
    total = sum(a["cost_usd"] for a in predicted["by_agent"].values())
    assert total == pytest.approx(predicted["cost_usd"], abs=1e-4)
    assert predicted["cost_usd"] > 0
    assert predicted["model"] == "claude-haiku-5-5"
    assert predicted["price_usd_per_mtok"] == {"input": 0.10, "output": 0.50}
    assert predicted["largest_chunk"]["tokens"] == max(
        s["largest_chunk_tokens"] for s in predicted["by_source"].values()
    )
    assert predicted["output_tokens_basis"].startswith("a guess")
    # Each heartbeat's first call alone, the rest 4 at a time (the default), 2 s each: 5 calls
    # then 3, then none.
    assert predicted["concurrency"] == 4
    assert predicted["estimated_seconds"] == 2.0 * (1 + 1) + 2.0 * (1 + 1)
    # Afterwards nothing is left: the bill is empty.
    after = bill(ws, settings)
    assert after["chunks"] == after["calls"] == 0 and after["heartbeats"] == 1
    # Calibrated: the ledger now holds the drain's calls (the fake answers with 20 tokens each).
    assert after["output_tokens_per_call"] == 20
    assert "usage ledger" in after["output_tokens_basis"]


def test_the_per_heartbeat_ceiling_splits_heartbeats(ws: Workspace) -> None:
    settings = settings_of(ws)
    settings = settings.model_copy(
        update={"budget": settings.budget.model_copy(update={"heartbeat_usd": 0.0005})}
    )
    predicted = bill(ws, settings)
    unlimited = bill(ws, settings_of(ws))
    assert predicted["heartbeats"] > unlimited["heartbeats"]
    assert "heartbeat_usd" in predicted["heartbeats_limited_by"]
    assert predicted["cost_usd"] == unlimited["cost_usd"]


def test_the_markers_provider_shows_its_real_zero_cost_and_the_chunks(ws: Workspace) -> None:
    settings = ws.settings(
        provider="markers",
        agents=[{"name": "ops", "sources": [{"format": "jsonl", "path": str(ws.logs / "ops")}]}],
    )
    predicted = bill(ws, settings)
    heartbeats, chunks = drain(ws, settings, None)
    assert predicted["chunks"] == chunks == 8  # one conversation cut by a share
    assert predicted["heartbeats"] == heartbeats
    assert predicted["cost_usd"] == 0.0 and predicted["calls"] == 0
    assert predicted["by_agent"]["ops"]["cost_usd"] == 0.0
    assert predicted["partial"] is False


def test_a_source_that_cannot_be_read_makes_the_bill_partial(ws: Workspace) -> None:
    fifo = ws.root / "pipe"
    os.mkfifo(fifo)
    settings = ws.settings(
        llm={"model": "claude-haiku-5-5"},
        agents=[
            {"name": "ops", "sources": [{"format": "jsonl", "path": str(ws.logs / "ops")}]},
            {"name": "dev", "sources": [{"format": "jsonl", "path": str(fifo)}]},
        ],
    )
    predicted = bill(ws, settings)
    assert predicted["partial"] is True
    (reason,) = predicted["partial_reasons"]
    assert str(fifo) in reason and "could not be read" in reason
    assert predicted["by_agent"]["dev"]["chunks"] == 0


def test_an_unpriced_model_or_a_cap_makes_the_bill_partial(ws: Workspace) -> None:
    unpriced = bill(ws, settings_of(ws, model="claude-unknown-9"))
    assert unpriced["partial"] is True and unpriced["cost_usd"] is None
    assert "has no price" in unpriced["partial_reasons"][0]
    capped = bill(ws, settings_of(ws), max_heartbeats=1)
    assert capped["partial"] is True and capped["heartbeats"] == 1
    assert "first 1 heartbeats" in capped["partial_reasons"][0]


def test_the_json_keeps_its_keys_and_adds_the_backlog(tmp_path: Path) -> None:
    write_config(tmp_path)
    assert memoryd("init", cwd=tmp_path).returncode == EXIT_OK
    result = memoryd("heartbeat", "--dry-run", cwd=tmp_path)
    assert result.returncode == EXIT_OK
    report = json.loads(result.stdout)
    for key in ("chunks", "chunks_to_send", "estimated_calls", "estimated_cost_usd", "by_agent"):
        assert key in report
    assert report["backlog"]["cost_usd"] == 0.0  # the markers provider of the test config
    text = memoryd("heartbeat", "--dry-run", "--text", cwd=tmp_path)
    assert text.returncode == EXIT_OK
    assert "over 1 heartbeat " in text.stdout and "nothing is billed" in text.stdout
    alone = memoryd("heartbeat", "--text", cwd=tmp_path)
    assert alone.returncode == EXIT_USAGE


def test_dry_run_heartbeat_reports_the_whole_bill(ws: Workspace) -> None:
    report = dry_run_heartbeat(settings_of(ws), ws.environment(), seconds_per_call=3.0)
    backlog = report["backlog"]
    assert isinstance(backlog, dict)
    assert backlog["chunks"] == 14 and backlog["seconds_per_call"] == 3.0


def test_the_table_shows_the_bill_its_rows_and_why_it_is_partial(ws: Workspace) -> None:
    report = dry_run_heartbeat(settings_of(ws, model="claude-unknown-9"), ws.environment())
    out = io.StringIO()
    print_bill(report, out)
    text = out.getvalue()
    assert "The whole backlog: 14 chunks (14 to send)" in text
    assert "Model claude-unknown-9 which has no price: cost unpriced." in text
    assert "AN ESTIMATE OF PART" in text and "has no price" in text
    assert "agent dev" in text and "agent ops" in text and "source jsonl:" in text
    assert "assuming 8 s a call" in text


def test_seconds_per_call_goes_with_a_dry_run_and_must_be_above_zero(tmp_path: Path) -> None:
    write_config(tmp_path)
    assert memoryd("init", cwd=tmp_path).returncode == EXIT_OK
    alone = memoryd("heartbeat", "--seconds-per-call", "3", cwd=tmp_path)
    assert alone.returncode == EXIT_USAGE
    assert "--seconds-per-call goes with --dry-run" in alone.stderr
    zero = memoryd("heartbeat", "--dry-run", "--seconds-per-call", "0", cwd=tmp_path)
    assert zero.returncode == EXIT_USAGE
    assert "must be above 0" in zero.stderr
    given = memoryd("heartbeat", "--dry-run", "--seconds-per-call", "3", cwd=tmp_path)
    assert json.loads(given.stdout)["backlog"]["seconds_per_call"] == 3.0


def test_the_daily_ceiling_spreads_the_bill_over_days(ws: Workspace) -> None:
    settings = settings_of(ws)
    settings = settings.model_copy(
        update={"budget": settings.budget.model_copy(update={"daily_usd": 0.0008})}
    )
    predicted = bill(ws, settings)
    assert predicted["cost_usd"] > 0.0032  # more than four days' ceiling, less than five
    assert predicted["days"] == 1 + math.ceil((predicted["cost_usd"] - 0.0008) / 0.0008)
    assert "daily_usd" in predicted["heartbeats_limited_by"]
    assert bill(ws, settings_of(ws))["days"] is None  # no daily ceiling in these tests
