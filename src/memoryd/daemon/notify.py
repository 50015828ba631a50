"""systemd's notification protocol, without libsystemd.

One datagram per message to the AF_UNIX socket named by `$NOTIFY_SOCKET` (a leading `@` means
the abstract namespace). Outside systemd (no socket) every call is a no-op, so the daemon runs
the same way by hand. A failed send is reported to the caller's logger, never raised: the
daemon's work matters more than its status line.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping


class Notifier:
    """Sends READY/STATUS/WATCHDOG/STOPPING messages to systemd, if systemd is listening."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        address = environ.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]
        elif address and not address.startswith("/"):
            address = ""  # neither a path nor an abstract name: not a socket we can use
        self._address = address
        watchdog = environ.get("WATCHDOG_USEC", "")
        self.watchdog_seconds = int(watchdog) / 1_000_000 if watchdog.isdigit() else None
        self._standing: str | None = None
        self._last_status = ""

    @property
    def enabled(self) -> bool:
        return bool(self._address)

    def send(self, *fields: str) -> bool:
        """Send `KEY=value` fields in one datagram; return whether it was delivered."""
        if not self._address:
            return False
        payload = "\n".join(fields).encode("utf-8")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self._address)
                sock.sendall(payload)
        except OSError:
            return False
        return True

    def ready(self, status: str = "") -> bool:
        self._last_status = status
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        """Set the status line (one line; systemd shows it in `systemctl status`), led by the
        standing problem if there is one."""
        self._last_status = text
        line = f"{self._standing}; {text}" if self._standing and text else self._standing or text
        return self.send("STATUS=" + " ".join(line.split()))

    def set_standing(self, problem: str | None) -> bool:
        """A problem that leads every status line until it is set back to None (a failed
        reload); the line is sent again at once."""
        if problem == self._standing:
            return False
        self._standing = problem
        return self.status(self._last_status)

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.send("STOPPING=1")
