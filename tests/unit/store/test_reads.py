"""Reads counted as accesses: once per fact, agent and day; the record is pruned and strict."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest

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
