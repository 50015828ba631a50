"""How values are written into and read out of SQLite columns.

Datetimes are stored as fixed-width ISO-8601 UTC strings with microseconds
(`2026-01-28T14:05:00.000000+00:00`), so that comparing the strings compares the instants and
range queries can use an index. Only aware datetimes are accepted; a naive one is a bug in the
caller, refused loudly. Calendar days are `YYYY-MM-DD`. JSON is stored canonically (sorted keys,
no insignificant whitespace, UTF-8 kept as is) so that the same value always has the same bytes.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

from memoryd.state.errors import StateValueError


def instant_to_text(moment: datetime) -> str:
    """Given an aware datetime, return its fixed-width UTC text. Raise StateValueError if naive."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise StateValueError(f"naive datetime {moment.isoformat()} (pass an aware UTC datetime)")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def instant_from_text(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def optional_instant(text: str | None) -> datetime | None:
    return None if text is None else instant_from_text(text)


def day_to_text(day: date) -> str:
    # A datetime is also a date; storing its time part would break equality on the day column.
    if isinstance(day, datetime):
        raise StateValueError(f"expected a calendar day, got the datetime {day.isoformat()}")
    return day.isoformat()


def day_from_text(text: str) -> date:
    return date.fromisoformat(text)


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of a JSON-compatible value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonicalize_json_text(text: str, what: str) -> str:
    """Given JSON text, return its canonical form. Raise StateValueError if it does not parse."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise StateValueError(f"{what} is not valid JSON: {error}") from error
    return canonical_json(value)
