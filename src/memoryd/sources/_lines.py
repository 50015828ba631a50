"""Stream complete lines out of a growing file in bounded memory.

Invariants:
- Only lines ended by `\\n` are yielded; an unterminated tail is left for the next scan and the
  position stays at its first byte.
- No more than about `max_line + block` bytes are held at once. A line longer than `max_line` is
  skipped and counted without ever being held whole; if the file ends inside such a line, the
  scan says so (`in_long_line`) and the next scan goes on skipping from there.
- A scan stops after the line that brings the bytes consumed to `budget`, so one call never
  reads unboundedly much; `reached_eof` tells whether it saw the end of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO


class LineScan:
    """One pass over a file from `start`.

    Iterate for (line number, start offset, bytes) of each complete line, then read the totals.
    """

    def __init__(
        self,
        stream: BinaryIO,
        start: int,
        first_line: int,
        *,
        budget: int,
        max_line: int,
        block: int,
        in_long_line: bool = False,
    ) -> None:
        self._stream = stream
        self._start = start
        self._budget = max(1, budget)
        self._max_line = max_line
        self._block = block
        self.position = start
        self.line = first_line
        self.in_long_line = in_long_line
        self.long_lines = 0
        self.reached_eof = False

    def __iter__(self) -> Iterator[tuple[int, int, bytes]]:
        stream = self._stream
        stream.seek(self._start)
        buffer = bytearray()
        buffer_start = self._start  # file offset of buffer[0]
        while self.position - self._start < self._budget:
            chunk = stream.read(self._block)
            if not chunk:
                self.reached_eof = True
                return
            if self.in_long_line:
                newline = chunk.find(b"\n")
                if newline < 0:
                    self.position += len(chunk)
                    buffer_start = self.position
                    continue
                self.position += newline + 1
                self.line += 1
                self.in_long_line = False
                chunk = chunk[newline + 1 :]
                buffer_start = self.position
            buffer += chunk
            cut = 0
            while True:
                newline = buffer.find(b"\n", cut)
                if newline < 0:
                    break
                length = newline - cut
                self.line += 1
                if length > self._max_line:
                    self.long_lines += 1
                else:
                    yield self.line, buffer_start + cut, bytes(buffer[cut:newline])
                cut = newline + 1
                self.position = buffer_start + cut
                if self.position - self._start >= self._budget:
                    return
            del buffer[:cut]
            buffer_start += cut
            if len(buffer) > self._max_line:
                # Too long already and still no newline: stop holding it and skip to its end.
                self.long_lines += 1
                self.in_long_line = True
                self.position = buffer_start + len(buffer)
                buffer_start = self.position
                buffer.clear()


def last_line_end(stream: BinaryIO, size: int, block: int = 1 << 16) -> tuple[int, int]:
    """Return (offset just past the last newline, number of newlines) without holding the file."""
    stream.seek(0)
    lines = 0
    end = 0
    offset = 0
    while offset < size:
        chunk = stream.read(min(block, size - offset))
        if not chunk:
            break
        count = chunk.count(b"\n")
        if count:
            lines += count
            end = offset + chunk.rindex(b"\n") + 1
        offset += len(chunk)
    return end, lines
