"""The envelope an OpenClaw gateway wraps around what a person sent, and the time it gives.

A gateway (Telegram, Discord, WhatsApp, ...) prepends metadata blocks to the user's text before
the model sees it, and OpenClaw writes the text with them to its session logs and memory files:

    Conversation info (untrusted metadata):
    ```json
    {"message_id": "3161", "sender_id": "72916257", "timestamp": "Wed 2026-03-18 09:42 UTC", ...}
    ```

    Sender (untrusted metadata):
    ```json
    {"label": "Da (72916257)", "id": "72916257", "username": "..."}
    ```

    [Wed 2026-03-18 09:42 UTC] the words the person typed

Any run of such `<Label> (untrusted ...):` fenced blocks at the start is removed (current
gateways write "Conversation info" then "Sender"; older ones only "Sender"; others add
"Replied message" or "Forwarded message context"), then one leading `[Day YYYY-MM-DD HH:MM TZ]`
stamp. The time, from the stamp or the conversation info's `timestamp`, is returned when its
zone is UTC or a numeric offset (`GMT+9`, `UTC-05:00`); a named zone such as `PST` is ambiguous
and gives no time.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone

_BLOCK = re.compile(
    r"\A\s*[A-Z][^\n]{0,80}? \(untrusted[^)\n]*\):\s*```[a-z]*[ \t]*\n(.*?)\n```[ \t]*(?:\n|\Z)",
    re.DOTALL,
)
_DAYS = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_TIME = (
    rf"{_DAYS} (\d{{4}}-\d{{2}}-\d{{2}}) (\d{{1,2}}:\d{{2}})(?::\d{{2}})?"
    r"(?: ([A-Za-z]{2,5}(?:[+-]\d{1,2}(?::?\d{2})?)?))?"
)
_STAMP = re.compile(rf"\A\s*\[{_TIME}\][ \t]*")
_TIME_VALUE = re.compile(rf"\A{_TIME}\Z")
_OFFSET = re.compile(r"\A(?:UTC|GMT|Z)?([+-])(\d{1,2})(?::?(\d{2}))?\Z")


def strip_envelope(text: str) -> tuple[str, datetime | None]:
    """Return the person's own words and, when the envelope gives it, when they were sent."""
    moment: datetime | None = None
    stripped = False
    while True:
        match = _BLOCK.match(text)
        if match is None:
            break
        stripped = True
        moment = moment or _metadata_time(match.group(1))
        text = text[match.end() :]
    stamp = _STAMP.match(text)
    if stamp is not None:
        stripped = True
        moment = _time_of(stamp.group(1), stamp.group(2), stamp.group(3)) or moment
        text = text[stamp.end() :]
    return (text.strip() if stripped else text), moment


def _metadata_time(block: str) -> datetime | None:
    try:
        data = json.loads(block)
    except ValueError:
        return None
    value = data.get("timestamp") if isinstance(data, dict) else None
    if not isinstance(value, str):
        return None
    match = _TIME_VALUE.match(value.strip())
    return None if match is None else _time_of(match.group(1), match.group(2), match.group(3))


def _time_of(day: str, clock: str, zone: str | None) -> datetime | None:
    try:
        local = datetime.fromisoformat(f"{day}T{clock.zfill(5)}")
    except ValueError:
        return None
    if zone is None or zone.upper() in {"UTC", "GMT", "Z"}:
        return local.replace(tzinfo=UTC) if zone is not None else None
    offset = _OFFSET.match(zone.upper())
    if offset is None:
        return None  # a named zone (PST, CET) is ambiguous: no time rather than a wrong one
    sign = -1 if offset.group(1) == "-" else 1
    delta = timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0))
    try:
        return local.replace(tzinfo=timezone(sign * delta)).astimezone(UTC)
    except ValueError:
        return None
