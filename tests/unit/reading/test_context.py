"""The context bundle: priority order, fitting to the budget, stable output, cited facts."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from tests.support.rewrite import Planted, planted_store

from memoryd.errors import StoreError
from memoryd.reading.context import Section, build_bundle, fit
from memoryd.reading.files import ReadOnlyStore
from memoryd.store.tiers import TierRule

TODAY = date(2026, 3, 10)


def test_every_section_keeps_its_share_then_the_first_ones_take_the_rest() -> None:
    jane = "\n".join(f"- fact {n} [jane-{n:03d}]" for n in range(1, 80))
    sections = [
        Section("Tacit", "MEMORY.md", "- short\n", "tacit"),
        Section("Jane", "jane/summary.md", jane, "entity"),
        Section("Note", "memory/x.md", "- a note [not-001]\n", "note"),
    ]
    bundle = fit(sections, agent="ops", today=TODAY, budget=250)
    assert bundle.included == ["MEMORY.md", "jane/summary.md", "memory/x.md"]
    assert bundle.cut == ["jane/summary.md"] and bundle.left_out == []
    assert bundle.text.index("- short") < bundle.text.index("jane-001") < bundle.text.index("not-")
    assert bundle.text.endswith(
        "Left out to fit the budget: the rest of jane/summary.md. Get them with "
        "`memoryd search QUERY`, or the MCP tools `search`, `get_entity` and `context`.\n"
    )
    assert bundle.fact_ids[0] == "jane-001" and "not-001" not in bundle.fact_ids
    assert 180 < bundle.tokens <= 250
    whole = fit(sections, agent="ops", today=TODAY, budget=100_000)
    assert whole.left_out == [] and whole.cut == [] and len(whole.fact_ids) == 79
    tiny = fit(sections, agent="ops", today=TODAY, budget=10)
    assert tiny.included == [] and tiny.left_out == ["MEMORY.md", "jane/summary.md", "memory/x.md"]


def test_the_bundle_holds_routine_skills_and_the_hottest_entities_first(tmp_path: Path) -> None:
    store = planted_store(
        tmp_path / "store",
        [
            Planted("Cold Carl", "Old news", age=200),
            Planted("Warm Wendy", "Likes tea", age=15),
            Planted("Hot Harry", "Started today", age=0),
            Planted("Hot Harry", "Ships on Friday", age=1),
        ],
        today=TODAY,
    )
    routine = store / "agents" / "ops" / "routines" / "triage-skills.md"
    routine.parent.mkdir(parents=True)
    routine.write_text("# Routine skills: triage\n\n## Dashboards\n\n- check them first\n")
    bundle = build_bundle(
        ReadOnlyStore(store),
        agent="ops",
        routine="triage",
        today=TODAY,
        rule=TierRule(),
        tacit_file="MEMORY.md",
        skills_dir="agents",
    )
    headings = [line for line in bundle.text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## How the user works (MEMORY.md)"
    assert headings[1] == "## Routine triage (agents/ops/routines/triage-skills.md)"
    assert headings[2].startswith("## Hot Harry (people/hot-harry)")
    assert headings[3].startswith("## Warm Wendy (people/warm-wendy)")
    # The agent's own entity, cold for months, still comes (last), saying what it knows.
    assert headings[4].startswith("## Cold Carl (people/cold-carl)")
    assert "- Old news (from 2025-08) [cold-carl-001]" in bundle.text
    assert "### Dashboards" in bundle.text  # the file's own headings nest under the section
    # Planted entities have no summary.md yet: the template stands in.
    assert "- Started today [hot-harry-001]" in bundle.text
    assert bundle.fact_ids == ["hot-harry-001", "hot-harry-002", "warm-wendy-001", "cold-carl-001"]


def _entity_headings(
    store: Path, agent: str, *, today: date = TODAY, hottest: list[str] | None = None
) -> list[str]:
    bundle = build_bundle(
        ReadOnlyStore(store),
        agent=agent,
        routine=None,
        today=today,
        hottest=hottest,
        rule=TierRule(),
        tacit_file="MEMORY.md",
        skills_dir="agents",
    )
    lines = bundle.text.splitlines()
    return [line.split(" (")[0] for line in lines if line.startswith("## ") and "/people/" in line]


def test_each_agent_is_offered_the_entities_it_deals_with_most_first(tmp_path: Path) -> None:
    store = planted_store(
        tmp_path / "store",
        [
            Planted("Hot Harry", "Started today", age=0),
            Planted("Warm Wendy", "Likes tea", age=15),
            Planted("Warm Wendy", "Plays chess", age=16),
            Planted("Cold Carl", "Old news", age=200),
        ],
        today=TODAY,
    )
    # Harry's and Carl's facts came from the sales agent's conversations, Wendy's from ops'.
    for folder in ("hot-harry", "cold-carl"):
        items = store / "life" / "areas" / "people" / folder / "items.json"
        items.write_text(items.read_text().replace('"agent": "ops"', '"agent": "sales"'))
    # ops: its own two warm facts (2 x 3 x 2) outweigh someone else's hot one (4); another
    # agent's cold entity is not offered.
    assert _entity_headings(store, "ops") == ["## Warm Wendy", "## Hot Harry"]
    # sales: its hot fact (3 x 4) outweighs ops' two warm ones (2 x 2); its own cold entity
    # comes last.
    assert _entity_headings(store, "sales") == ["## Hot Harry", "## Warm Wendy", "## Cold Carl"]
    # A year on, nothing is hot or warm and the index has no candidate: each agent is still
    # offered its own entities (one cold fact each for sales: by folder), never another's.
    later = date(2027, 3, 10)
    assert _entity_headings(store, "ops", today=later, hottest=[]) == ["## Warm Wendy"]
    sales = _entity_headings(store, "sales", today=later, hottest=[])
    assert sales == ["## Cold Carl", "## Hot Harry"]


def test_the_read_only_store_reads_inside_the_store_only(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    (tmp_path / "store" / "a.md").write_text("inside")
    store = ReadOnlyStore(tmp_path / "store")
    assert store.read_text("a.md") == "inside"
    assert store.read_text("../secret.txt") is None
    assert not store.exists("../secret.txt") and store.list_dir("..") == []
    assert store.list_dir(".") == ["a.md"]
    with pytest.raises(StoreError, match="readers do not write"):
        store.write_text("a.md", "x")
    with pytest.raises(StoreError, match="readers do not write"):
        store.move_dir("a", "b")
    with pytest.raises(StoreError, match="readers do not write"):
        store.remove("a.md")
    assert (tmp_path / "store" / "a.md").read_text() == "inside"
