"""sd_notify over a real datagram socket, as systemd would receive it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.daemon.notify import Notifier


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(5)
        yield sock, path


def test_messages_arrive_as_single_datagrams(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "30000000"})
    assert notifier.enabled
    assert notifier.watchdog_seconds == 30.0
    assert notifier.ready("starting")
    assert sock.recv(4096) == b"READY=1\nSTATUS=starting"
    assert notifier.status("last heartbeat:\n+3 facts")
    assert sock.recv(4096) == b"STATUS=last heartbeat: +3 facts"
    assert notifier.watchdog()
    assert sock.recv(4096) == b"WATCHDOG=1"
    assert notifier.stopping()
    assert sock.recv(4096) == b"STOPPING=1"


def test_abstract_namespace_sockets_are_supported() -> None:
    name = f"memoryd-test-{id(object())}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).watchdog()
        assert sock.recv(4096) == b"WATCHDOG=1"


def test_outside_systemd_everything_is_a_quiet_no_op(tmp_path: Path) -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert notifier.watchdog_seconds is None
    assert not notifier.ready()
    # A socket that went away is reported as undelivered, never raised.
    gone = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")})
    assert not gone.watchdog()
