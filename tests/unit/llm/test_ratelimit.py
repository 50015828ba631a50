"""The rate gate: the API's rate-limit headers slow every call of a client down."""

from __future__ import annotations

import threading

from memoryd.llm.ratelimit import RateGate, exhausted_for, retry_after_seconds

DATE = "Wed, 02 Dec 2026 05:00:00 GMT"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_retry_after_reads_milliseconds_first_and_ignores_nonsense() -> None:
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after_seconds({"retry-after": "-3"}) is None
    assert retry_after_seconds({}) is None


def test_an_exhausted_limit_waits_until_its_reset_measured_from_the_answers_date() -> None:
    headers = {
        "date": DATE,
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2026-12-02T05:00:12Z",
        "anthropic-ratelimit-input-tokens-remaining": "0",
        "anthropic-ratelimit-input-tokens-reset": "2026-12-02T05:00:20+00:00",
        "anthropic-ratelimit-tokens-remaining": "900",
        "anthropic-ratelimit-tokens-reset": "2026-12-02T05:00:59Z",
    }
    assert exhausted_for(headers) == 20.0  # both exhausted limits must reset
    assert exhausted_for({**headers, "date": "garbage"}) is None
    assert exhausted_for({"anthropic-ratelimit-requests-remaining": "3"}) is None
    bad_reset = {**headers, "anthropic-ratelimit-input-tokens-reset": "soon"}
    assert exhausted_for(bad_reset) == 12.0
    past = {**headers, "anthropic-ratelimit-input-tokens-reset": "2026-12-02T04:59:00Z"}
    assert exhausted_for(past) == 12.0


def test_a_retry_after_holds_the_other_threads_but_not_the_one_that_backs_off() -> None:
    clock = Clock()
    gate = RateGate(clock.sleep, max_wait_seconds=60, monotonic=lambda: clock.now)
    gate.observe({"retry-after": "5"}, failed=True)
    assert gate.wait() == 0.0  # this thread waits in its own retry backoff
    other: list[float] = []
    thread = threading.Thread(target=lambda: other.append(gate.wait()))
    thread.start()
    thread.join()
    assert other == [5.0]
    assert gate.wait() == 0.0  # the time has passed


def test_an_exhausted_limit_holds_every_thread_and_waits_are_capped() -> None:
    clock = Clock()
    gate = RateGate(clock.sleep, max_wait_seconds=30, monotonic=lambda: clock.now)
    gate.observe({"retry-after": "5"}, failed=False)  # only an error's retry-after counts
    assert gate.wait() == 0.0
    gate.observe(
        {
            "date": DATE,
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": "2026-12-02T05:02:00Z",
        },
        failed=False,
    )
    assert gate.wait() == 30.0
    assert clock.waits == [30.0]
