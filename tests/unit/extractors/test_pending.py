"""The heartbeat's view of pending facts: the state table plus this heartbeat's staged changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from memoryd.extractors.apply import PendingRecord
from memoryd.extractors.contract import FactIn
from memoryd.extractors.pending import PendingOverlay, write_pending_changes
from memoryd.state import State
from memoryd.store.entities import normalize_name

SOURCE = {"agent": "ops", "session": "s1", "file": "/logs/a.jsonl", "lines": [3, 9]}


@pytest.fixture
def state(tmp_path: Path) -> Iterator[State]:
    opened = State.open(tmp_path / "state" / "state.db")
    yield opened
    opened.close()


def record(
    text: str, *, name: str = "Bob Stone", kind: str = "person", day: int = 2
) -> PendingRecord:
    """A pending fact shaped as `apply` stages it: the FactIn as JSON, its source as JSON."""
    fact = FactIn.model_validate(
        {"entity": {"name": name, "kind": kind}, "fact": text, "category": "context"}
    )
    return PendingRecord(
        entity_name=name,
        kind=kind,
        key=normalize_name(name),
        fact=fact.model_dump(mode="json"),
        conversation_date=date(2026, 3, day),
        source=SOURCE,
    )


def stored(state: State, *records: PendingRecord) -> None:
    """Pending facts left in the database by an earlier, committed heartbeat."""
    overlay = PendingOverlay(state.pending)
    for item in records:
        assert overlay.add(item)
    write_pending_changes(state.pending, overlay.staged_changes())


def texts(records: list[PendingRecord]) -> list[str]:
    return [str(item.fact["fact"]) for item in records]


# --- add ------------------------------------------------------------------------------------


def test_an_added_fact_is_staged_and_not_written(state: State) -> None:
    overlay = PendingOverlay(state.pending)

    assert overlay.add(record("Plays the cello"))

    [staged] = overlay.staged_changes()["add"]
    assert (staged["entity_name"], staged["kind"], staged["key"]) == (
        "Bob Stone",
        "person",
        "bob stone",
    )
    assert staged["conversation_date"] == "2026-03-02"
    assert state.pending.all() == []


@pytest.mark.parametrize(
    "variant", ["plays the cello", "Plays the cello.", "Plays  the\tcello", "PLAYS THE CELLO!"]
)
def test_the_same_text_is_staged_once(state: State, variant: str) -> None:
    overlay = PendingOverlay(state.pending)
    overlay.add(record("Plays the cello"))

    assert not overlay.add(record(variant, day=5))

    assert texts(overlay.added) == ["Plays the cello"]


def test_a_fact_already_pending_in_the_database_is_not_staged_again(state: State) -> None:
    stored(state, record("Plays the cello"))
    overlay = PendingOverlay(state.pending)

    assert not overlay.add(record("plays the cello.", day=7))

    assert overlay.staged_changes() == {"add": [], "remove": []}


def test_the_same_text_about_another_name_or_kind_is_another_pending_fact(state: State) -> None:
    overlay = PendingOverlay(state.pending)
    overlay.add(record("Plays the cello"))

    assert overlay.add(record("Plays the cello", name="Rob Stone"))
    assert overlay.add(record("Plays the cello", kind="project"))
    assert overlay.add(record("Plays the violin"))

    assert len(overlay.added) == 4


def test_punctuation_inside_a_fact_still_tells_facts_apart(state: State) -> None:
    overlay = PendingOverlay(state.pending)
    overlay.add(record("Writes C++"))

    assert overlay.add(record("Writes C"))


# --- take -----------------------------------------------------------------------------------


def test_take_returns_stored_and_staged_facts_of_any_key_oldest_first(state: State) -> None:
    stored(state, record("Moved to Lyon", day=4), record("Sold his car", day=9))
    overlay = PendingOverlay(state.pending)
    overlay.add(record("Plays the cello", name="Bobby", day=2))

    taken = overlay.take(["bob stone", "bobby"], "person")

    assert texts(taken) == ["Plays the cello", "Moved to Lyon", "Sold his car"]
    assert taken[0].record_id is None  # staged in this heartbeat, never written
    stored_ids = [item.record_id for item in taken[1:] if item.record_id is not None]
    assert len(stored_ids) == 2
    assert overlay.staged_changes() == {"add": [], "remove": sorted(stored_ids)}
    assert taken[1].source == SOURCE
    assert taken[1].conversation_date == date(2026, 3, 4)


def test_take_leaves_other_kinds_and_other_names_pending(state: State) -> None:
    stored(state, record("Is a person", name="Acme"), record("Sells anvils", name="Globex"))
    overlay = PendingOverlay(state.pending)
    overlay.add(record("Makes rockets", name="Acme", kind="company"))

    taken = overlay.take(["acme"], "company")

    assert texts(taken) == ["Makes rockets"]
    assert overlay.take(["globex"], "company") == []  # Globex is a person
    assert overlay.staged_changes() == {"add": [], "remove": []}
    assert texts(overlay.take(["acme"], "person")) == ["Is a person"]


def test_a_fact_is_taken_once(state: State) -> None:
    stored(state, record("Moved to Lyon"))
    overlay = PendingOverlay(state.pending)
    overlay.add(record("Plays the cello"))

    first = overlay.take(["bob stone"], "person")
    again = overlay.take(["bob stone"], "person")

    assert len(first) == 2
    assert again == []


# --- writing the staged changes -------------------------------------------------------------


def test_staged_changes_survive_the_intent_json_and_write_into_the_table(state: State) -> None:
    stored(state, record("Moved to Lyon", day=1))
    overlay = PendingOverlay(state.pending)
    overlay.take(["bob stone"], "person")
    overlay.add(record("Plays the cello", name="Ann Lee", day=3))
    # The changes travel through the commit intent, i.e. through JSON text.
    changes = json.loads(json.dumps(overlay.staged_changes()))

    write_pending_changes(state.pending, changes)

    [row] = state.pending.all()
    assert (row.entity_name, row.kind, row.entity_key) == ("Ann Lee", "person", "ann lee")
    assert row.conversation_date == date(2026, 3, 3)
    assert json.loads(row.fact_json) == record("Plays the cello", name="Ann Lee").fact
    assert json.loads(row.source_json) == SOURCE


def test_writing_the_same_changes_twice_changes_nothing_more(state: State) -> None:
    stored(state, record("Moved to Lyon", day=1))
    overlay = PendingOverlay(state.pending)
    overlay.take(["bob stone"], "person")
    overlay.add(record("Plays the cello", name="Ann Lee"))
    changes = overlay.staged_changes()

    write_pending_changes(state.pending, changes)
    first = state.pending.all()
    write_pending_changes(state.pending, changes)  # recovery finishing an intent again

    assert state.pending.all() == first
    assert len(first) == 1


def test_no_staged_changes_write_nothing(state: State) -> None:
    stored(state, record("Moved to Lyon"))
    before = state.pending.all()

    write_pending_changes(state.pending, PendingOverlay(state.pending).staged_changes())
    write_pending_changes(state.pending, {})

    assert state.pending.all() == before


def test_a_later_heartbeat_sees_what_an_earlier_one_wrote(state: State) -> None:
    first = PendingOverlay(state.pending)
    first.add(record("Plays the cello"))
    write_pending_changes(state.pending, first.staged_changes())

    later = PendingOverlay(state.pending)

    assert not later.add(record("Plays the cello."))
    [taken] = later.take(["bob stone"], "person")
    assert taken.record_id == state.pending.all()[0].id


def test_a_fact_taken_then_staged_again_is_still_pending_after_the_write(state: State) -> None:
    stored(state, record("Plays the cello"))
    overlay = PendingOverlay(state.pending)
    overlay.take(["bob stone"], "person")
    assert overlay.add(record("Plays the cello"))

    write_pending_changes(state.pending, overlay.staged_changes())

    assert [json.loads(row.fact_json)["fact"] for row in state.pending.all()] == ["Plays the cello"]
