"""Signals reach the control thread, not the interrupted one; handlers are restored after."""

from __future__ import annotations

import os
import signal
import threading

from memoryd.daemon.signals import SignalChannel


def test_a_signal_is_handled_on_the_control_thread_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGHUP)
    received: list[tuple[int, str]] = []
    arrived = threading.Event()

    def on_signal(number: int) -> None:
        received.append((number, threading.current_thread().name))
        arrived.set()

    with SignalChannel([signal.SIGHUP], on_signal):
        assert signal.getsignal(signal.SIGHUP) is not before
        os.kill(os.getpid(), signal.SIGHUP)
        assert arrived.wait(10)
    assert received == [(signal.SIGHUP, "memoryd-control")]
    assert signal.getsignal(signal.SIGHUP) == before


def test_send_queues_like_a_signal_and_close_stops_the_thread() -> None:
    got: list[int] = []
    done = threading.Event()

    def on_signal(number: int) -> None:
        got.append(number)
        if len(got) == 2:
            done.set()

    channel = SignalChannel([], on_signal)
    with channel:
        channel.send(signal.SIGTERM)
        channel.send(signal.SIGINT)
        assert done.wait(10)
    assert got == [signal.SIGTERM, signal.SIGINT]
    assert not any(t.name == "memoryd-control" for t in threading.enumerate())
