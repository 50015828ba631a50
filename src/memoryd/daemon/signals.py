"""Signals turned into calls on a control thread, so that no real work runs in a handler.

A Python signal handler runs in the main thread between two bytecodes, possibly while that
thread holds a lock the scheduler or a `threading.Event` needs; calling into the scheduler from
there can deadlock. So the handler only writes the signal's number to a pipe, and a control
thread reads the pipe and calls `on_signal(number)` where taking locks is safe.

`SignalChannel` restores the previous handlers and stops its thread on `close()`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

_CLOSE = 0  # not a signal number: tells the control thread to finish


class SignalChannel:
    """Forwards the given signals to `on_signal`, called on a dedicated control thread."""

    def __init__(self, signals: Iterable[signal.Signals], on_signal: Callable[[int], None]) -> None:
        self._signals = tuple(signals)
        self._on_signal = on_signal
        self._read, self._write = os.pipe()
        # A full pipe must never block the main thread; a dropped duplicate signal is harmless.
        os.set_blocking(self._write, False)
        self._previous: dict[signal.Signals, Any] = {}
        self._thread = threading.Thread(target=self._listen, name="memoryd-control", daemon=True)

    def __enter__(self) -> SignalChannel:
        self._thread.start()
        for number in self._signals:
            self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def send(self, number: int) -> None:
        """Queue `number` for the control thread, as a signal would (also for tests)."""
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write, bytes([number]))

    def close(self) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous.clear()
        if self._thread.is_alive():
            self.send(_CLOSE)
            self._thread.join()
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _handle(self, number: int, _frame: FrameType | None) -> None:
        self.send(number)

    def _listen(self) -> None:
        while True:
            data = os.read(self._read, 64)
            for number in data:
                if number == _CLOSE:
                    return
                self._on_signal(number)
            if not data:
                return
