"""How instants, days and JSON are stored."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.state import StateValueError
from memoryd.state._codec import (
    canonicalize_json_text,
    day_to_text,
    instant_from_text,
    instant_to_text,
)

aware_instants = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(9000, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone.min]),
)


def test_a_naive_datetime_is_refused() -> None:
    with pytest.raises(StateValueError, match="naive"):
        instant_to_text(datetime(2026, 1, 1, 12, 0))


def test_an_offset_instant_is_stored_in_utc() -> None:
    paris = timezone(timedelta(hours=1))
    text = instant_to_text(datetime(2026, 1, 1, 12, 0, tzinfo=paris))
    assert text == "2026-01-01T11:00:00.000000+00:00"
    assert instant_from_text(text).tzinfo == UTC


def test_a_datetime_is_not_a_day() -> None:
    with pytest.raises(StateValueError):
        day_to_text(datetime(2026, 1, 1, tzinfo=UTC))
    assert day_to_text(date(2026, 1, 2)) == "2026-01-02"


def test_json_is_canonical_and_invalid_json_refused() -> None:
    assert canonicalize_json_text('{"b": 1,  "a": "é"}', "x") == '{"a":"é","b":1}'
    with pytest.raises(StateValueError, match="not valid JSON"):
        canonicalize_json_text("{nope", "the thing")


@given(aware_instants, aware_instants)
def test_stored_text_orders_like_the_instants(first: datetime, second: datetime) -> None:
    assert (instant_to_text(first) < instant_to_text(second)) == (first < second)
    assert instant_from_text(instant_to_text(first)) == first
