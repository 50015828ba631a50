"""The backfill progress bar: drawn only on a terminal, never past 100 %."""

from __future__ import annotations

import errno
import io
import os

from hypothesis import given
from hypothesis import strategies as st

from memoryd.cli.progress import TerminalProgress, render_bar
from memoryd.heartbeat import HeartbeatReport


def test_nothing_is_drawn_when_stderr_is_not_a_terminal() -> None:
    assert TerminalProgress.for_stream(io.StringIO()) is None


def read_until_eof(leader: int) -> bytes:
    """Everything written to a pty, once its follower side is closed.

    One read returns only what the line discipline has passed on so far, which under load is
    not all of it. At EOF Linux raises EIO rather than returning b"" (other systems do that).
    """
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError as error:
            if error.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_the_line_ended() -> None:
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w", closefd=True) as terminal:
            progress = TerminalProgress.for_stream(terminal)
            assert progress is not None
            report = HeartbeatReport("r1", chunks=4, chunks_extracted=1, cost_usd=0.01)
            progress(report)
            report.chunks_extracted = 2
            progress(report)
            progress.close()
        output = read_until_eof(leader).decode()
    finally:
        os.close(leader)
    assert output.count("\r[") == 2  # each drawing returns to the start of the line
    assert "    1/4 chunks" in output
    assert output.endswith("    2/4 chunks  $0.0100\r\n")  # the terminal shows "\n" as "\r\n"


def test_the_bar_fills_with_settled_chunks() -> None:
    report = HeartbeatReport("r1", chunks=10, chunks_extracted=3, chunks_reused=1, chunks_empty=1)
    assert render_bar(report).startswith("[" + "#" * 15 + "." * 15 + "]")


@given(
    st.integers(0, 500),
    st.integers(0, 500),
    st.integers(0, 500),
    st.integers(0, 500),
)
def test_the_bar_keeps_its_width_and_never_passes_the_total(
    total: int, extracted: int, failed: int, deferred: int
) -> None:
    report = HeartbeatReport(
        "r1",
        chunks=total,
        chunks_extracted=extracted,
        chunks_failed=failed,
        chunks_deferred=deferred,
    )
    bar = render_bar(report)
    assert len(bar[: bar.index("]") + 1]) == 32
    done = int(bar.split("]")[1].split("/")[0])
    assert done <= max(total, 1)
