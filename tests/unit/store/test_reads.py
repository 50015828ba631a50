"""Reads counted as accesses: once per fact, agent and day; the record is pruned and strict."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from structlog.testing import capture_logs

from memoryd.errors import CorruptFileError, StoreError
from memoryd.store.catalog import EntityCatalog
from memoryd.store.facts import FactBook, FactDraft, FactSource
from memoryd.store.reads import KEEP_DAYS, apply_reads, counted_reads, reads_path

from .conftest import MemoryTransaction

SOURCE = FactSource("ops", "s", "/t/a.jsonl", (1, 2))
DAY = date(2026, 3, 10)


def _book() -> tuple[MemoryTransaction, FactBook]:
    tx = MemoryTransaction()
    catalog = EntityCatalog.load(tx)
    entity = catalog.create("Jane Doe", "person", today=DAY)
    book = FactBook(tx, catalog)
    book.file_for(entity).add(
        FactDraft("Lives in Lisbon", "context", DAY, DAY - timedelta(days=5), SOURCE),
        recorded_at=DAY,
    )
    return tx, book


def test_each_fact_agent_and_day_counts_once_and_old_keys_are_pruned() -> None:
    tx, book = _book()
    reads = [
        ("jane-doe-001", "ops", DAY),
        ("jane-doe-001", "ops", DAY),
        ("jane-doe-001", "other", DAY),
        ("nobody-001", "ops", DAY),
    ]
    assert apply_reads(tx, book, "host", reads, today=DAY) == 2
    fact = book.lookup_fact("jane-doe-001")
    assert fact is not None and (fact[1].access_count, fact[1].last_accessed) == (2, DAY)
    assert apply_reads(tx, book, "host", reads, today=DAY) == 0
    later = DAY + timedelta(days=KEEP_DAYS + 1)
    assert apply_reads(tx, book, "host", [("jane-doe-001", "ops", later)], today=later) == 1
    assert counted_reads(tx, "host") == {(later.isoformat(), "ops", "jane-doe-001")}
    assert json.loads(tx.read_text(reads_path("host")) or "")["counted"] == [
        [later.isoformat(), "ops", "jane-doe-001"]
    ]


def test_a_damaged_record_is_an_error_not_a_reset() -> None:
    tx, book = _book()
    tx.write_text(reads_path("host"), '{"counted": [1, 2]}')
    with pytest.raises(CorruptFileError):
        apply_reads(tx, book, "host", [("jane-doe-001", "ops", DAY)], today=DAY)


def test_retract_keeps_the_fact_with_its_reason_and_refuses_twice() -> None:
    tx, book = _book()
    found = book.lookup_fact("jane-doe-001")
    assert found is not None
    fact_file = book.file_for(found[0])
    retracted = fact_file.retract("jane-doe-001", on=DAY, reason="never\ntrue")
    assert retracted.status == "retracted"
    assert retracted.extra["retraction"] == {"on": "2026-03-10", "reason": "never true"}
    fact_file.save()
    text = tx.read_text(found[0].items_path) or ""
    assert json.loads(text)[0]["status"] == "retracted"
    with pytest.raises(StoreError, match="already retracted"):
        fact_file.retract("jane-doe-001", on=DAY, reason="")
    with pytest.raises(StoreError, match="unknown"):
        fact_file.retract("jane-doe-009", on=DAY, reason="")


def test_a_read_dated_in_the_future_counts_as_read_today() -> None:
    tx, book = _book()
    future = date(2100, 1, 1)
    with capture_logs() as logs:
        assert apply_reads(tx, book, "host", [("jane-doe-001", "ops", future)], today=DAY) == 1
    fact = book.lookup_fact("jane-doe-001")
    assert fact is not None and fact[1].last_accessed == DAY  # not hot until 2100
    assert counted_reads(tx, "host") == {(DAY.isoformat(), "ops", "jane-doe-001")}
    assert any(log["event"] == "reads.clamped" for log in logs)
    # An old date is counted once, at the oldest day still recorded, not again each heartbeat.
    old = [("jane-doe-001", "ops", DAY - timedelta(days=40))]
    assert apply_reads(tx, book, "host", old, today=DAY) == 1
    assert apply_reads(tx, book, "host", old, today=DAY) == 0


def test_reads_by_agents_that_are_not_configured_are_refused_and_counted() -> None:
    tx, book = _book()
    invented = [("jane-doe-001", f"agent-{number}", DAY) for number in range(200)]
    agents = frozenset({"ops"})
    with capture_logs() as logs:
        bumps = apply_reads(tx, book, "host", invented, today=DAY, agents=agents)
    assert bumps == 0
    fact = book.lookup_fact("jane-doe-001")
    assert fact is not None and fact[1].access_count == 0
    refused = [log for log in logs if log["event"] == "reads.refused"]
    assert refused and refused[0]["reads"] == 200 and refused[0]["agents"] == 200
    configured = [("jane-doe-001", "ops", DAY), ("jane-doe-001", "cli", DAY)]
    assert apply_reads(tx, book, "host", configured, today=DAY, agents=agents) == 2
