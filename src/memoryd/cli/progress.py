"""A progress bar for a heartbeat run by hand on a terminal (a backfill can take a while).

Standard library only, drawn on stderr with a carriage return, and only when stderr is a
terminal: under systemd or in a pipe nothing is drawn and the logs stay pure JSON lines.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from memoryd.extractors.report import HeartbeatReport

_WIDTH = 30


class TerminalProgress:
    """Call it with the heartbeat's report after each chunk; `close()` ends the line."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._drawn = False
        self._lock = threading.Lock()  # calls come from the threads of calls in flight

    @classmethod
    def for_stream(cls, stream: TextIO) -> TerminalProgress | None:
        """A progress bar on `stream`, or None when it is not a terminal."""
        try:
            interactive = stream.isatty()
        except ValueError:  # closed
            return None
        return cls(stream) if interactive else None

    def __call__(self, report: HeartbeatReport) -> None:
        with self._lock:
            self._stream.write("\r" + render_bar(report))
            self._stream.flush()
            self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False


def render_bar(report: HeartbeatReport) -> str:
    """`[#####.....]  12/40 chunks  $0.0312` for the chunks settled so far."""
    total = max(report.chunks, 1)
    done = min(
        total,
        report.chunks_extracted
        + report.chunks_reused
        + report.chunks_empty
        + report.chunks_failed
        + report.chunks_deferred,
    )
    filled = _WIDTH * done // total
    bar = "#" * filled + "." * (_WIDTH - filled)
    return f"[{bar}] {done:>5}/{report.chunks} chunks  ${report.cost_usd:.4f}"
