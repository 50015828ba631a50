"""Reads count as accesses (docs/cli.md, Reading the memory; docs/store-format.md, Facts), exactly:
once per fact, agent and day, applied by
the next heartbeat in its commit, never twice, whatever a killed heartbeat left behind. Also the
search ranking (hot over warm over cold at equal match) and the index kept current per file."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest
from tests.support.harness import Workspace, turn
from tests.support.rewrite import Planted, plant

from memoryd.heartbeat import HeartbeatReport
from memoryd.jobs.environment import open_state
from memoryd.jobs.heartbeat import build_heartbeat
from memoryd.jobs.reading import agent_context, entity_view, refresh_search_index, search_store
from memoryd.jobs.reconcile import reconcile_state
from memoryd.reading.accesses import (
    QUEUE_NAME,
    claim_reads,
    queue_folder,
    record_reads,
    release_reads,
)
from memoryd.reading.remember import queue_memory
from memoryd.reading.search import SearchIndex
from memoryd.settings import Settings
from memoryd.store.tiers import TierRule

JANE = "life/areas/people/jane-doe"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def heartbeat(ws: Workspace, settings: Settings, *, release: bool = True) -> HeartbeatReport:
    """One heartbeat as `run_heartbeat` runs it: the read queue claimed, filed, released."""
    env = ws.environment()
    claimed = claim_reads(ws.root / "state")
    with (
        open_state(settings, env, discard_corrupt=True) as state,
        ws.extractor(settings, None) as extractor,
    ):
        beat = build_heartbeat(settings, env, state, extractor, reads=claimed.reads)
        reconcile_state(state, beat.git, beat.settings.host, env.clock())
        report = beat.run()
    if release and beat.reads_filed:
        release_reads(claimed)
    return report


def jane_facts(ws: Workspace) -> dict[str, tuple[int, str]]:
    return {f["id"]: (f["accessCount"], f["lastAccessed"]) for f in ws.facts(JANE)}


def test_access_bumps_are_exact_over_two_days(ws: Workspace) -> None:
    settings = ws.settings("markers")
    ws.write_log(
        "a.jsonl",
        [
            turn("user", "remember: person Jane Doe: Lives in Lisbon", "2026-03-01T09:00:00Z"),
            turn("user", "remember: person Jane Doe: Joined Acme", "2026-03-01T09:01:00Z"),
        ],
    )
    heartbeat(ws, settings)
    # Filed on 2026-03-10 from a conversation of 2026-03-01: filing is their first use.
    assert jane_facts(ws) == {"jane-doe-001": (0, "2026-03-10"), "jane-doe-002": (0, "2026-03-10")}

    # Day 1 (2026-03-10): ops searches twice, a person (cli) once (Lisbon is jane-doe-001); ops
    # loads its context, which cites both facts.
    env = ws.environment()
    search_store(settings, env, "Lisbon", agent="ops")
    search_store(settings, env, "Lisbon", agent="ops")
    search_store(settings, env, "Lisbon", agent="cli")
    agent_context(settings, env, agent="ops")
    report = heartbeat(ws, settings)
    assert report.commit is not None and report.counters.accesses == 3
    assert jane_facts(ws) == {"jane-doe-001": (2, "2026-03-10"), "jane-doe-002": (1, "2026-03-10")}
    assert ws.commits()[0] == "heartbeat: 3 accesses"
    counted = json.loads(ws.read(".memoryd/reads/localhost.json"))["counted"]
    assert ["2026-03-10", "ops", "jane-doe-001"] in counted

    # Same day again: ops reads once more (already counted); the entity view by the person (cli)
    # counts jane-doe-002 for cli (jane-doe-001 it had read already).
    search_store(settings, env, "Lisbon", agent="ops")
    entity_view(settings, env, "Jane Doe", agent="cli")
    heartbeat(ws, settings)
    assert jane_facts(ws) == {"jane-doe-001": (2, "2026-03-10"), "jane-doe-002": (2, "2026-03-10")}

    # Day 2: ops reads again: counted again, and lastAccessed moves to day 2.
    ws.now += timedelta(days=1)
    search_store(settings, ws.environment(), "Lisbon", agent="ops")
    heartbeat(ws, settings)
    assert jane_facts(ws) == {"jane-doe-001": (3, "2026-03-11"), "jane-doe-002": (2, "2026-03-10")}
    before = ws.tree()
    assert heartbeat(ws, settings).commit is None  # nothing queued, nothing changes
    assert ws.tree() == before


def test_reads_claimed_by_a_killed_heartbeat_are_never_counted_twice(ws: Workspace) -> None:
    settings = ws.settings("markers")
    plant(ws.store, [Planted("Jane Doe", "Lives in Lisbon", age=3)], today=ws.now.date())
    record_reads(ws.root / "state", ["jane-doe-001"], agent="ops", day=ws.now.date())
    # The heartbeat commits, then "dies" before forgetting the claimed queue.
    heartbeat(ws, settings, release=False)
    assert list((ws.root / "state" / "queue").glob("reads-claimed-*"))
    record_reads(ws.root / "state", ["jane-doe-001"], agent="mcp", day=ws.now.date())
    heartbeat(ws, settings)
    assert jane_facts(ws)["jane-doe-001"] == (2, "2026-03-10")  # ops once, mcp once
    assert not list((ws.root / "state" / "queue").glob("reads-claimed-*"))
    assert not (ws.root / "state" / "queue" / QUEUE_NAME).exists()


def test_a_bad_line_in_the_queue_is_skipped_and_the_rest_counted(ws: Workspace) -> None:
    settings = ws.settings("markers")
    plant(ws.store, [Planted("Jane Doe", "Lives in Lisbon", age=3)], today=ws.now.date())
    state = ws.root / "state"
    (queue_folder(state) / QUEUE_NAME).write_text("not json\n", encoding="utf-8")
    record_reads(state, ["jane-doe-001", "nobody-001"], agent="ops", day=ws.now.date())
    heartbeat(ws, settings)
    assert jane_facts(ws)["jane-doe-001"] == (1, "2026-03-10")


def test_at_equal_match_hot_beats_warm_beats_cold(ws: Workspace) -> None:
    plant(
        ws.store,
        [
            Planted("Anna", "Drinks green tea", age=100),
            Planted("Bruno", "Drinks green tea", age=15),
            Planted("Carla", "Drinks green tea", age=2),
        ],
        today=ws.now.date(),
    )
    hits = search_store(ws.settings("markers"), ws.environment(), "green tea", agent="t")
    facts = [(hit.ref, hit.tier) for hit in hits if hit.kind == "fact"]
    assert facts == [("people/carla", "hot"), ("people/bruno", "warm"), ("people/anna", "cold")]


def test_the_index_reads_again_only_the_files_that_changed(ws: Workspace) -> None:
    settings = ws.settings("markers")
    plant(
        ws.store,
        [
            Planted("Jane Doe", "Lives in Lisbon", age=1),
            Planted("Acme", "Sells anvils", age=1, kind="company"),
        ],
        today=ws.now.date(),
    )
    refresh_search_index(settings, ws.environment())
    with SearchIndex.open(ws.root / "state", ws.store) as index:
        assert index.refresh(tacit_file="MEMORY.md", skills_dir="agents").files_read == 0
        items = ws.store / JANE / "items.json"
        items.write_text(items.read_text("utf-8").replace("Lisbon", "Porto"), encoding="utf-8")
        stats = index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        assert (stats.files_read, stats.files_dropped) == (1, 0)
        hits = index.search("Porto", today=ws.now.date(), rule=_rule(settings))
        assert [hit.id for hit in hits] == ["jane-doe-001"]
        assert index.search("Lisbon", today=ws.now.date(), rule=_rule(settings)) == []
        items.unlink()
        assert index.refresh(tacit_file="MEMORY.md", skills_dir="agents").files_dropped == 1
    # A damaged index file is started afresh, loudly, and still answers.
    (ws.root / "state" / "search.sqlite").write_bytes(b"not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        (ws.root / "state" / f"search.sqlite{suffix}").unlink(missing_ok=True)
    hits = search_store(settings, ws.environment(), "anvils", agent="t")
    assert [hit.ref for hit in hits if hit.kind == "fact"] == ["companies/acme"]


def _rule(settings: Settings) -> TierRule:
    return TierRule.from_settings(settings.decay)


def test_a_remembered_memory_is_filed_by_the_next_heartbeat(ws: Workspace) -> None:
    settings = ws.settings("markers")
    state = ws.root / "state"
    queue_memory(
        state, agent="ops", text="Moved to Porto", entity="Jane Doe", kind="person", at=ws.now
    )
    queue_memory(state, agent="ops", text="Shipped the launch", entity=None, kind=None, at=ws.now)
    assert not (ws.store / JANE).exists()  # nothing written until a heartbeat
    report = heartbeat(ws, settings)
    assert report.counters.facts_added == 1
    facts = ws.facts(JANE)
    assert facts[0]["fact"] == "Moved to Porto" and facts[0]["source"]["agent"] == "ops"
    assert "Shipped the launch" in ws.read(f"memory/{date(2026, 3, 10).isoformat()}.md")
    assert heartbeat(ws, settings).commit is None  # read once, filed once


def test_a_supersede_marker_replaces_the_fact_through_a_heartbeat(ws: Workspace) -> None:
    settings = ws.settings("markers")
    ws.write_log(
        "a.jsonl",
        [turn("user", "remember: person Jane Doe: Lives in Lisbon", "2026-03-01T09:00:00Z")],
    )
    heartbeat(ws, settings)
    ws.write_log(
        "a.jsonl",
        [
            turn(
                "user",
                "supersede: person Jane Doe: jane-doe-001: Lives in Porto",
                "2026-03-02T09:00:00Z",
            )
        ],
        append=True,
    )
    heartbeat(ws, settings)
    facts = ws.facts(JANE)
    assert [(f["id"], f["status"], f["supersededBy"]) for f in facts] == [
        ("jane-doe-001", "superseded", "jane-doe-002"),
        ("jane-doe-002", "active", None),
    ]
    assert "Lisbon" not in ws.read(f"{JANE}/summary.md")


def test_reads_alone_leave_a_summary_that_is_still_true(ws: Workspace) -> None:
    settings = ws.settings("markers")
    plant(
        ws.store,
        [Planted("Jane Doe", "Lives in Lisbon", age=1), Planted("Jane Doe", "Knows Bob", age=20)],
        today=ws.now.date(),
    )
    prose = "# Jane Doe\n\nJane lives in Lisbon [jane-doe-001] and knows Bob [jane-doe-002].\n"
    (ws.store / JANE / "summary.md").write_text(prose, encoding="utf-8")
    ws.git("commit", "-qam", "the weekly rewrite's prose")
    record_reads(ws.root / "state", ["jane-doe-002"], agent="ops", day=ws.now.date())
    heartbeat(ws, settings)
    assert jane_facts(ws)["jane-doe-002"] == (1, "2026-03-10")  # now hot, still cited
    assert ws.read(f"{JANE}/summary.md") == prose
    # A new fact is not in the prose: the template stands in until the next rewrite.
    ws.write_log(
        "a.jsonl",
        [turn("user", "remember: person Jane Doe: Speaks Portuguese", "2026-03-10T09:00:00Z")],
    )
    heartbeat(ws, settings)
    assert "- Speaks Portuguese [jane-doe-003]" in ws.read(f"{JANE}/summary.md")
