"""A `memoryd run` child for the daemon tests: its JSON log lines collected as they come, waited
on by event (never by sleeping), stopped with SIGTERM or killed."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class DaemonProcess:
    """A running `memoryd --log-format json … run`; its stderr lines are collected as they come."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def events(self) -> list[dict[str, Any]]:
        with self._changed:
            return [json.loads(line) for line in self.lines]

    def wait_for(
        self, event: str, *, count: int = 1, timeout: float = 60, **fields: Any
    ) -> dict[str, Any]:
        """The `count`-th log line with this event (and fields); fail after `timeout` s or once
        the daemon has exited without it."""
        deadline = time.monotonic() + timeout

        def found() -> list[dict[str, Any]]:
            matches = []
            for line in self.lines:
                record = json.loads(line)
                if record.get("event") == event and all(
                    record.get(k) == v for k, v in fields.items()
                ):
                    matches.append(record)
            return matches

        with self._changed:
            while len(found()) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (
                    self.process.poll() is not None and not self._reader.is_alive()
                ):
                    raise AssertionError(f"no {event} {fields} in:\n" + "\n".join(self.lines))
                self._changed.wait(min(remaining, 0.5))
            return found()[count - 1]

    def stop(self, timeout: float = 30) -> tuple[int, float]:
        """SIGTERM; return the exit code and how long the exit took. A daemon that does not exit
        fails the test with its log; one that exits non-zero prints its log for the report."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("no exit after SIGTERM:\n" + "\n".join(self.lines)) from None
        elapsed = time.monotonic() - started
        self._reader.join(5)
        if code != 0:
            print("\n".join(self.lines))
        return code, elapsed

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(5)
        if self.process.stderr is not None:
            self.process.stderr.close()
