"""Pending facts of entities that have not qualified yet."""

from __future__ import annotations

import json
from datetime import date

import pytest

from memoryd.state import PendingEntity, State, StateValueError

SOURCE = '{"agent": "cos", "session": "s1", "file": "/t/a.jsonl", "lines": [3, 9]}'


def _add(state: State, name: str, key: str, fact: str, day: int, *, kind: str = "company") -> bool:
    return state.pending.add(
        entity_name=name,
        kind=kind,
        entity_key=key,
        fact_json=json.dumps({"fact": fact, "category": "context"}),
        conversation_date=date(2026, 3, day),
        source_json=SOURCE,
    )


def test_the_same_fact_is_stored_once(state: State) -> None:
    assert _add(state, "Acme", "acme", "Sells anvils", 2)
    # Same fact, keys in another order and spacing: the same canonical JSON.
    assert not state.pending.add(
        entity_name="ACME",
        kind="company",
        entity_key="acme",
        fact_json='{ "category": "context", "fact": "Sells anvils" }',
        conversation_date=date(2026, 3, 5),
        source_json="{}",
    )
    facts = state.pending.all()
    assert len(facts) == 1
    assert facts[0].fact_json == '{"category":"context","fact":"Sells anvils"}'
    assert facts[0].conversation_date == date(2026, 3, 2)
    assert json.loads(facts[0].source_json)["lines"] == [3, 9]


def test_listing_by_keys_returns_facts_oldest_first(state: State) -> None:
    _add(state, "Acme", "acme", "Moved to Austin", 4)
    _add(state, "Acme Inc.", "acme", "Sells anvils", 2)
    _add(state, "Acme", "acme", "A person named Acme", 1, kind="person")
    _add(state, "Globex", "globex", "Competitor", 1)

    both_kinds = state.pending.for_keys(["acme", "unknown"])
    companies = state.pending.for_keys(["acme"], kind="company")

    assert [f.fact_json for f in both_kinds] == [
        '{"category":"context","fact":"A person named Acme"}',
        '{"category":"context","fact":"Sells anvils"}',
        '{"category":"context","fact":"Moved to Austin"}',
    ]
    assert [f.entity_name for f in companies] == ["Acme Inc.", "Acme"]
    assert state.pending.for_keys([]) == []


def test_removing_filed_facts(state: State) -> None:
    _add(state, "Acme", "acme", "one", 1)
    _add(state, "Acme", "acme", "two", 2)
    _add(state, "Globex", "globex", "three", 3)
    filed = [fact.id for fact in state.pending.for_keys(["acme"])]
    assert state.pending.remove([*filed, 9999]) == 2
    assert [f.entity_key for f in state.pending.all()] == ["globex"]
    # Filed facts may be pending again later (a new conversation says it again).
    assert _add(state, "Acme", "acme", "one", 5)


def test_entities_summarize_what_waits(state: State) -> None:
    _add(state, "Acme Inc.", "acme", "one", 3)
    _add(state, "Acme", "acme", "two", 2)
    _add(state, "Jane", "jane", "likes tea", 9, kind="person")
    assert state.pending.entities() == [
        PendingEntity("company", "acme", "Acme Inc.", 2, date(2026, 3, 2)),
        PendingEntity("person", "jane", "Jane", 1, date(2026, 3, 9)),
    ]


def test_invalid_json_is_refused(state: State) -> None:
    with pytest.raises(StateValueError, match="pending fact"):
        state.pending.add(
            entity_name="Acme",
            kind="company",
            entity_key="acme",
            fact_json="not json",
            conversation_date=date(2026, 3, 1),
            source_json="{}",
        )
    assert state.pending.all() == []
