"""Day one after a backfill: six months of two agents' history, filed today by a real heartbeat
(the markers extractor), reads as memory: summaries, gists and `context` name the entities' facts,
old ones marked with their month; then the tiers follow real use as the clock moves on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.support.harness import Workspace, turn

from memoryd.jobs.environment import open_state
from memoryd.jobs.heartbeat import build_heartbeat
from memoryd.jobs.reading import agent_context
from memoryd.jobs.reconcile import reconcile_state
from memoryd.jobs.rewrite import run_rewrite
from memoryd.reading.accesses import claim_reads, record_reads, release_reads
from memoryd.settings import Settings
from memoryd.store.items import parse_items
from memoryd.store.tiers import TierRule, tier_of

START = datetime(2025, 9, 1, 9, tzinfo=UTC)  # six months before the workspace's clock
FILED = datetime(2026, 3, 10, 12, tzinfo=UTC)
CLIENTS = {"ops": ["Borealis", "Cobalt"], "sales": ["Dunmore", "Eastwind"]}


def history(ws: Workspace) -> None:
    """Each agent talks about its first client in September and October 2025, its second one
    every week from then to March 2026."""
    for agent, (first, second) in CLIENTS.items():
        rows: list[dict[str, str]] = []
        for week in range(26):
            name = first if week < 8 else second
            when = START + timedelta(weeks=week)
            said = f"remember: company {name}: Agreed milestone {week} with {name}"
            rows.append({**turn("user", said, when.isoformat()), "session": f"{agent}{week}"})
        ws.write_log(f"{agent}/history.jsonl", rows)


@pytest.fixture
def backfilled(tmp_path: Any) -> tuple[Workspace, Settings]:
    ws = Workspace(tmp_path, now=FILED)
    ws.init()
    history(ws)
    agents = [
        {"name": agent, "sources": [{"format": "jsonl", "path": str(ws.logs / agent)}]}
        for agent in CLIENTS
    ]
    settings = ws.settings("markers", agents=agents)
    report = ws.heartbeat(settings)
    assert report.counters.facts_added == 52
    return ws, settings


def heartbeat_with_reads(ws: Workspace, settings: Settings) -> None:
    """One heartbeat as `run_heartbeat` runs it, the queue of agents' reads claimed and filed."""
    env = ws.environment()
    claimed = claim_reads(ws.root / "state")
    with (
        open_state(settings, env, discard_corrupt=True) as state,
        ws.extractor(settings, None) as extractor,
    ):
        beat = build_heartbeat(settings, env, state, extractor, reads=claimed.reads)
        reconcile_state(state, beat.git, beat.settings.host, env.clock())
        beat.run()
    assert beat.reads_filed
    release_reads(claimed)


def summary(ws: Workspace, name: str) -> str:
    return ws.read(f"life/areas/companies/{name.lower()}/summary.md")


def tiers(ws: Workspace, name: str) -> list[str]:
    path = ws.store / f"life/areas/companies/{name.lower()}/items.json"
    facts = parse_items(path, path.read_text(encoding="utf-8"))
    return [tier_of(fact, ws.now.date(), TierRule()) for fact in facts]


def test_a_backfilled_store_reads_as_memory_on_day_one(
    backfilled: tuple[Workspace, Settings],
) -> None:
    ws, settings = backfilled
    borealis = ws.facts("life/areas/companies/borealis")
    # The conversation's date is the fact's own; filing is its first use.
    assert borealis[0]["timestamp"] == "2025-09-01"
    assert {fact["lastAccessed"] for fact in borealis} == {"2026-03-10"}
    index = ws.read("life/index.md")
    for name in ("Borealis", "Cobalt", "Dunmore", "Eastwind"):
        text = summary(ws, name)
        assert "used recently" not in text
        assert "Agreed milestone" in text and f"with {name}" in text
        assert set(tiers(ws, name)) == {"hot"}
    assert "used recently" not in index
    assert "- Agreed milestone 0 with Borealis (from 2025-09) [borealis-001]" in summary(
        ws, "Borealis"
    )
    assert "Agreed milestone 0 with Borealis (from 2025-09)" in index  # Borealis' gist
    # Each agent is offered its own clients first.
    for agent, own in CLIENTS.items():
        bundle = agent_context(settings, ws.environment(), agent=agent, record=False)
        offered = [path.split("/")[3] for path in bundle.included if path.endswith("summary.md")]
        assert sorted(offered[:2]) == [name.lower() for name in own]
        assert len(offered) == 4


def test_after_filing_the_tiers_follow_real_use(backfilled: tuple[Workspace, Settings]) -> None:
    ws, settings = backfilled
    # Twenty days on, ops reads two of Cobalt's facts (`memoryd search`, say); the next
    # heartbeat counts the use.
    ws.now = FILED + timedelta(days=20)
    cited = {"cobalt-001", "cobalt-002"}
    record_reads(ws.root / "state", sorted(cited), agent="ops", day=ws.now.date())
    heartbeat_with_reads(ws, settings)
    used = {f["id"]: f for f in ws.facts("life/areas/companies/cobalt")}
    assert (used["cobalt-001"]["accessCount"], used["cobalt-001"]["lastAccessed"]) == (
        1,
        "2026-03-30",
    )
    # Forty days after filing, what was used is warm; what nobody used is cold.
    ws.now = FILED + timedelta(days=40)
    path = ws.store / "life/areas/companies/cobalt/items.json"
    for fact in parse_items(path, path.read_text(encoding="utf-8")):
        expected = "warm" if fact.id in cited else "cold"
        assert tier_of(fact, ws.now.date(), TierRule()) == expected, fact.id
    assert set(tiers(ws, "Dunmore")) == {"cold"}
    run_rewrite(settings, ws.environment())  # markers: the template
    # Unused for forty days, Dunmore's summary still says what it is, from its background.
    dunmore = summary(ws, "Dunmore")
    assert dunmore.startswith("# Dunmore\n\n## Background\n\n- Agreed milestone")
    assert "(from 2025-" in dunmore and "used recently" not in dunmore
    assert dunmore.count("\n- ") == 5
    assert "used recently" not in ws.read("life/index.md")
    # Cobalt's used facts are its summary now; its cold ones stay out.
    cobalt = summary(ws, "Cobalt")
    assert "[cobalt-001]" in cobalt and "[cobalt-002]" in cobalt and "[cobalt-003]" not in cobalt
    # Only the used entity is offered to ops now: the search index hands `context` the entities
    # with a hot or warm fact, so unused ones (even ops' own Borealis) have left the bundle.
    bundle = agent_context(settings, ws.environment(), agent="ops", record=False)
    offered = [path.split("/")[3] for path in bundle.included if path.endswith("summary.md")]
    assert offered == ["cobalt"]
    # Eighty days after filing nothing is hot or warm: ops is still offered its own clients (the
    # one it dealt with most first), never sales' ones, so it can use them again.
    ws.now = FILED + timedelta(days=80)
    bundle = agent_context(settings, ws.environment(), agent="ops", record=False)
    offered = [path.split("/")[3] for path in bundle.included if path.endswith("summary.md")]
    assert offered == ["cobalt", "borealis"]
