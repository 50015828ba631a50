"""Fixtures for the state database tests: a real SQLite file under pytest's tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd.state import State

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def at(minutes: float) -> datetime:
    """An instant `minutes` after T0: tests pass their clock in, like production code."""
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "state.db"


@pytest.fixture
def state(state_path: Path) -> Iterator[State]:
    opened = State.open(state_path)
    yield opened
    opened.close()
