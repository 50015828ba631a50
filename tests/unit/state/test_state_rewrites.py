"""Rewrite tracking: per-entity digests and tier-change dates, the pending batch."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from memoryd.state import EntityRewrite, State, StateError

from .conftest import at


def test_record_and_read_back_entities(state: State) -> None:
    state.rewrites.record(
        "people/jane-doe", rewritten_at=at(0), digest="d1", next_tier_change=date(2026, 3, 8)
    )
    state.rewrites.record("companies/acme", rewritten_at=at(0), digest="d2", next_tier_change=None)
    state.rewrites.record(
        "people/jane-doe", rewritten_at=at(5), digest="d3", next_tier_change=date(2026, 3, 30)
    )
    assert state.rewrites.get("people/jane-doe") == EntityRewrite(
        "people/jane-doe", at(5), "d3", date(2026, 3, 30)
    )
    assert list(state.rewrites.all()) == ["companies/acme", "people/jane-doe"]
    assert state.rewrites.get("projects/none") is None


def test_due_selects_entities_whose_tiers_change_by_today(state: State) -> None:
    state.rewrites.record_many(
        [
            EntityRewrite("a", at(0), "x", date(2026, 3, 5)),
            EntityRewrite("b", at(0), "x", date(2026, 3, 6)),
            EntityRewrite("c", at(0), "x", date(2026, 3, 7)),
            EntityRewrite("cold", at(0), "x", None),
        ]
    )
    assert state.rewrites.due(date(2026, 3, 4)) == []
    assert state.rewrites.due(date(2026, 3, 6)) == ["a", "b"]
    assert state.rewrites.due(date(2027, 1, 1)) == ["a", "b", "c"]


def test_last_successful_rewrite(state_path: Path) -> None:
    with State.open(state_path) as state:
        assert state.rewrites.last_success() is None
        state.rewrites.set_last_success(at(30))
    with State.open(state_path) as state:
        assert state.rewrites.last_success() == at(30)


def test_a_pending_batch_survives_a_restart_and_is_finished_once(state_path: Path) -> None:
    requests = {"r-9f2c": "people/jane-doe", "r-01ab": "companies/acme"}
    with State.open(state_path) as state:
        state.rewrites.start_batch("msgbatch_1", submitted_at=at(0), requests=requests)
        with pytest.raises(StateError, match="still pending"):
            state.rewrites.start_batch("msgbatch_2", submitted_at=at(1), requests={})

    with State.open(state_path) as state:
        pending = state.rewrites.pending_batch()
        assert pending is not None
        assert pending.batch_id == "msgbatch_1"
        assert pending.submitted_at == at(0)
        assert dict(pending.requests) == requests
        assert state.rewrites.finish_batch("msgbatch_1")
        assert not state.rewrites.finish_batch("msgbatch_1")
        assert state.rewrites.pending_batch() is None
        assert state.db.scalar("SELECT count(*) FROM rewrite_batch_requests") == 0
        state.rewrites.start_batch("msgbatch_2", submitted_at=at(2), requests={"x": "areas/y"})
        second = state.rewrites.pending_batch()
        assert second is not None
        assert second.requests == {"x": "areas/y"}
