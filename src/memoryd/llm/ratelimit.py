"""Slowing down when the API says so, for every call in flight at once.

One `RateGate` is shared by the calls of one client, whichever thread makes them. Two kinds of
signal close it for a while:

- an error answer with `retry-after-ms` / `retry-after` (a 429 or 529): the call that got it
  waits through its own retry backoff, and every other call waits as long before its next
  request, instead of running into the same limit;
- any answer whose `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining`
  is 0: the next request of every call waits for that limit's `-reset` time (RFC 3339). The
  wait is measured against the same answer's `date` header, so no local clock is read and a
  skewed one does not matter.

A wait is never longer than `max_wait_seconds`. Waiting is done with the client's injectable
`sleep`, so tests record the waits instead of sleeping them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime

LIMITS = ("requests", "tokens", "input-tokens", "output-tokens")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait an answer asks for, from `retry-after-ms` or `retry-after` in seconds.

    An HTTP-date `retry-after` is ignored (reading it would need the clock); negative, zero or
    unparsable values are ignored too."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if value > 0:
            return value
    return None


def exhausted_for(headers: Mapping[str, str]) -> float | None:
    """Seconds until the first exhausted rate limit named in the answer resets (None: none is
    exhausted, or the answer does not say when)."""
    sent = _http_date(headers.get("date"))
    waits = []
    for limit in LIMITS:
        if headers.get(f"anthropic-ratelimit-{limit}-remaining", "").strip() != "0":
            continue
        reset = _rfc3339(headers.get(f"anthropic-ratelimit-{limit}-reset"))
        if reset is not None and sent is not None:
            waits.append((reset - sent).total_seconds())
    positive = [wait for wait in waits if wait > 0]
    return max(positive) if positive else None


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo is not None else None


def _rfc3339(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


class RateGate:
    """Shared by every call of one client; see the module docstring."""

    def __init__(
        self,
        sleep: Callable[[float], None],
        *,
        max_wait_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sleep = sleep
        self._monotonic = monotonic
        self._max_wait = max_wait_seconds
        self._lock = threading.Lock()
        self._open_at = 0.0
        # The thread whose own retry backoff already waits out the current closing (None: it
        # applies to every thread).
        self._owner: int | None = None

    def wait(self) -> float:
        """Before a request: wait until the gate opens; return how long that was."""
        with self._lock:
            delay = self._open_at - self._monotonic()
            if self._owner == threading.get_ident():
                delay = 0.0
        if delay <= 0:
            return 0.0
        delay = min(delay, self._max_wait)
        self._sleep(delay)
        return delay

    def observe(self, headers: Mapping[str, str], *, failed: bool) -> None:
        """After an answer: close the gate for as long as its headers ask."""
        hinted = retry_after_seconds(headers) if failed else None
        exhausted = exhausted_for(headers)
        if hinted is not None:
            # This thread waits through its own retry backoff; the others wait here.
            self._close(hinted, owner=threading.get_ident())
        if exhausted is not None:
            self._close(exhausted, owner=None)

    def _close(self, seconds: float, *, owner: int | None) -> None:
        until = self._monotonic() + min(seconds, self._max_wait)
        with self._lock:
            if until > self._open_at:
                self._open_at = until
                self._owner = owner
