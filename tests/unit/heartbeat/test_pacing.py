"""The calls kept in flight follow the verdicts on answers sent ahead: a stale answer (asked
again, paid twice) halves them, as many right answers in a row as are allowed add one back."""

from __future__ import annotations

from tests.support.held_extractor import HeldExtractor

from memoryd.heartbeat.ahead import Ahead


def test_a_stale_answer_halves_the_calls_in_flight_and_right_ones_add_them_back() -> None:
    ahead = Ahead(HeldExtractor(), 8)
    assert ahead.allowed == 8
    assert not ahead.judged(stale=False)  # all allowed already: nothing to add
    assert ahead.judged(stale=True) and ahead.allowed == 4
    assert ahead.judged(stale=True) and ahead.allowed == 2
    assert ahead.judged(stale=True) and ahead.allowed == 1
    assert not ahead.judged(stale=True) and ahead.allowed == 1  # never below one
    assert ahead.judged(stale=False) and ahead.allowed == 2  # one right answer at 1
    assert not ahead.judged(stale=False)
    assert ahead.judged(stale=False) and ahead.allowed == 3  # two in a row at 2
    assert not ahead.judged(stale=False)
    assert ahead.judged(stale=True) and ahead.allowed == 1  # a stale one starts the count again
    for _ in range(1 + 2 + 3 + 4 + 5 + 6 + 7):
        ahead.judged(stale=False)
    assert ahead.allowed == 8
