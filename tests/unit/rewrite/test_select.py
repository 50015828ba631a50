"""The selection pass over a real store: only changed entities, the fast path, the days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.rewrite import TODAY, Planted, plant, planted_store

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.rewrite.select import Mode, Selection, select, tracking_digest
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.catalog import EntityCatalog
from memoryd.store.summaries import summary_input
from memoryd.store.tiers import TierRule
from memoryd.worktree import UnitOfWork

RULE = TierRule()
NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return planted_store(
        tmp_path / "store",
        [
            Planted("Jane Doe", "Joined Acme as CTO", age=2),
            Planted("Acme", "Renewed the contract", age=20, kind="company"),
            Planted("Old Co", "Closed in 2019", age=300, kind="company"),
        ],
    )


def selection_on(
    store: Path, tracked: dict[str, EntityRewrite], day: date = TODAY, mode: Mode = "llm"
) -> Selection:
    uow = UnitOfWork(GitStore(store, GitIdentity("m", "m@x"), None))
    return select(uow, EntityCatalog.load(uow).entities(), tracked, today=day, rule=RULE, mode=mode)


def record(selection: Selection) -> dict[str, EntityRewrite]:
    tracked = {r.ref: r for r in selection.refreshed}
    for candidate in selection.changed:
        tracked[candidate.input.entity.ref] = EntityRewrite(
            candidate.input.entity.ref,
            NOW,
            tracking_digest("llm", candidate.items_digest, candidate.input.digest),
            candidate.input.next_change,
        )
    return tracked


def test_first_pass_selects_every_entity_with_facts(store: Path) -> None:
    first = selection_on(store, {})
    assert sorted(c.input.entity.ref for c in first.changed) == [
        "companies/acme",
        "companies/old-co",
        "people/jane-doe",
    ]
    old = next(c for c in first.changed if c.input.entity.ref == "companies/old-co")
    # Its only fact is cold: given as background, marked with the month it dates from.
    [background] = old.input.facts
    assert (background.tier, background.dated, old.input.cold_count) == ("cold", "2025-05", 1)


def test_nothing_changed_means_nothing_selected_and_nothing_parsed(store: Path) -> None:
    tracked = record(selection_on(store, {}))
    again = selection_on(store, tracked)
    assert again.changed == [] and again.parsed == 0 and again.entities == 3


def test_the_passing_of_days_selects_exactly_the_entities_changing_tier(store: Path) -> None:
    tracked = record(selection_on(store, {}))
    # Jane's fact (2 days old) turns warm on day 8 after its use; Acme's (20) turns cold on 31.
    assert tracked["people/jane-doe"].next_tier_change == TODAY + timedelta(days=6)
    for offset, expected in [
        (5, []),
        (6, ["people/jane-doe"]),
        (11, ["companies/acme", "people/jane-doe"]),
    ]:
        day = TODAY + timedelta(days=offset)
        assert [c.input.entity.ref for c in selection_on(store, tracked, day).changed] == expected


def test_a_new_fact_selects_its_entity_only(store: Path) -> None:
    tracked = record(selection_on(store, {}))
    plant(store, [Planted("Acme", "Opened a Lisbon office", age=0, kind="company")])
    assert [c.input.entity.ref for c in selection_on(store, tracked).changed] == ["companies/acme"]


def test_an_access_bump_that_keeps_tiers_rewrites_nothing(store: Path) -> None:
    tracked = record(selection_on(store, {}))
    plant(store, [Planted("Jane Doe", "Joined Acme as CTO", age=2, accesses=1)])
    again = selection_on(store, tracked)
    assert again.changed == [] and again.parsed == 1
    assert [r.ref for r in again.refreshed] == ["people/jane-doe"]


def test_a_template_summary_is_redone_when_the_llm_is_back(store: Path) -> None:
    tracked = {
        ref: EntityRewrite(ref, r.rewritten_at, "template" + r.digest[3:], r.next_tier_change)
        for ref, r in record(selection_on(store, {})).items()
    }
    assert selection_on(store, tracked, mode="template").changed == []
    assert len(selection_on(store, tracked, mode="llm").changed) == 3


def test_the_input_digest_ignores_cold_facts_text_unless_they_are_all_there_is() -> None:
    from tests.support.rewrite import fact, person

    one = summary_input(
        person(), [fact("jane-doe-001", age=1), fact("jane-doe-002", "a", age=99)], TODAY, RULE
    )
    two = summary_input(
        person(), [fact("jane-doe-001", age=1), fact("jane-doe-002", "b", age=99)], TODAY, RULE
    )
    assert one.digest == two.digest
    # With nothing hot or warm, the cold fact is background, and its text is part of the input.
    alone = summary_input(person(), [fact("jane-doe-002", "a", age=99)], TODAY, RULE)
    other = summary_input(person(), [fact("jane-doe-002", "b", age=99)], TODAY, RULE)
    assert alone.digest != other.digest
