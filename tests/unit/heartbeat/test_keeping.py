"""An answer sent ahead is journalled and charged by the worker thread that receives it, before
its future is done: a heartbeat killed while its own thread is busy loses no answer that arrived.

Real threads (the heartbeat's pool) and a real state database, read through a connection of the
test's own, as the next heartbeat would read it. The extractor is a stand-in that waits for the
test's signal and returns an answer: the model call itself is the fake server's business (see
tests/integration/test_crash_ahead.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.support.extractors import make_chunk
from tests.support.held_extractor import COST, MODEL, HeldExtractor

from memoryd.budget import Budget
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import ChunkContext
from memoryd.heartbeat.ahead import Ahead
from memoryd.heartbeat.keeping import Keeper
from memoryd.llm.prices import ModelPrice, PriceTable
from memoryd.state import State

PRICES = PriceTable({MODEL: ModelPrice(input=10.0, output=20.0, cache_write=12.5, cache_read=1.0)})
NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    database = tmp_path / "state" / "state.db"
    with State.open(database) as state:
        state.runs.start("run-1", "heartbeat", NOON)
    yield database


def keeper(path: Path, state: State, *, busy_timeout_ms: int = 5_000) -> Keeper:
    budget = Budget(0.0, 0.0, MODEL, PRICES, state, lambda: NOON)
    return Keeper(
        path,
        budget,
        run_id="run-1",
        clock=lambda: NOON,
        model=MODEL,
        busy_timeout_ms=busy_timeout_ms,
    )


def send(ahead: Ahead, state: State, chunk: Chunk, *, planned: bool = True) -> None:
    """Send the chunk ahead, its plan journalled first as the heartbeat does (unless not
    `planned`)."""
    if planned:
        state.journal.plan(chunk.key, run_id="run-1", plan_json='{"p": 1}', at=NOON)
    ahead.send(
        chunk,
        plan='{"p": 1}',
        context=ChunkContext(known_entities="", skills_index=""),
        estimate=None,
        may_retry=lambda used: True,
        asked_with="stamp-1",
    )


def test_the_worker_journals_and_charges_an_answer_before_its_future_is_done(path: Path) -> None:
    chunks = [make_chunk("Dana leads it.", session=f"s{n}") for n in range(3)]
    extractor = HeldExtractor()
    with State.open(path) as heartbeat:
        ahead = Ahead(extractor, 4, keeper(path, heartbeat))
        for chunk in chunks:
            send(ahead, heartbeat, chunk)
        extractor.release.set()
        flights = ahead.flights()
        for flight in flights:
            flight.future.result(timeout=30)
        # Nothing on the heartbeat's thread journalled them: the workers did.
        with State.open(path) as reader:
            for chunk, flight in zip(chunks, flights, strict=True):
                record = reader.journal.answered(chunk.key)
                assert record is not None and record.state == "answered"
                assert record.asked_with == "stamp-1"
                assert "rollout" in (record.answer_json or "")
                assert flight.receipt.kept
                assert flight.receipt.cost == pytest.approx(COST)
            totals = reader.usage.totals_for_run("run-1")
            assert totals.cost_usd == pytest.approx(3 * COST)
        ahead.close()


def test_an_answer_the_worker_cannot_write_is_left_to_the_heartbeat_unpaid(path: Path) -> None:
    chunk = make_chunk("Dana leads it.")
    extractor = HeldExtractor()
    with State.open(path) as heartbeat:
        ahead = Ahead(extractor, 2, keeper(path, heartbeat, busy_timeout_ms=50))
        send(ahead, heartbeat, chunk)
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database
        try:
            extractor.release.set()
            flight = ahead.flights()[0]
            flight.future.result(timeout=30)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert not flight.receipt.kept
        record = heartbeat.journal.get(chunk.key)
        assert record is not None and record.state == "planned"
        assert heartbeat.usage.totals_for_run("run-1").cost_usd == 0.0
        ahead.close()


def test_an_answer_for_a_chunk_never_planned_is_not_kept(path: Path) -> None:
    chunk = make_chunk("Dana leads it.")
    extractor = HeldExtractor()
    extractor.release.set()
    with State.open(path) as heartbeat:
        ahead = Ahead(extractor, 2, keeper(path, heartbeat))
        send(ahead, heartbeat, chunk, planned=False)
        flight = ahead.flights()[0]
        flight.future.result(timeout=30)
        assert not flight.receipt.kept
        assert heartbeat.usage.totals_for_run("run-1").cost_usd == 0.0
        ahead.close()
