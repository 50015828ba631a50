"""Shared helpers for the source reader tests: whole-source reads.

The shared real samples are located by `tests.support.shared_samples`, the synthetic
transcripts are written by `tests.fakes.transcripts`.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from memoryd.settings import SourceSettings
from memoryd.sources.cursor import FileCursor
from memoryd.sources.model import Turn
from memoryd.sources.reader import DEFAULT_MAX_BYTES, ReadResult, SourceReader

T = TypeVar("T")
NOBODY = 65534
# A folder the unprivileged reader cannot enter: root's 0700 for `nobody` (see as_unprivileged);
# for a normal user, who owns the folder, no permission at all.
LOCKED = 0o700 if os.geteuid() == 0 else 0o000


def make_reader(fmt: str, path: Path | str, *, routine: str | None = None) -> SourceReader:
    return SourceReader("tester", SourceSettings(format=fmt, path=str(path), routine=routine))


def read_once(
    reader: SourceReader,
    cursors: Mapping[str, FileCursor] | None = None,
    *,
    since: datetime | None = None,
    first_sight: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ReadResult:
    cursors = cursors or {}
    sight = first_sight if first_sight is not None else not cursors
    return reader.read(cursors, since=since, first_sight=sight, max_bytes=max_bytes)


def all_turns(result: ReadResult) -> list[Turn]:
    return [turn for conversation in result.conversations for turn in conversation.turns]


def texts(result: ReadResult, role: str | None = None) -> list[str]:
    return [turn.text for turn in all_turns(result) if role is None or turn.role == role]


def read_until_done(
    reader: SourceReader,
    cursors: Mapping[str, FileCursor] | None = None,
    *,
    since: datetime | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[list[str], ReadResult, int]:
    """Read again while the byte budget left something: (all texts, last result, reads made)."""
    result = read_once(reader, cursors, since=since, max_bytes=max_bytes)
    collected = texts(result)
    reads = 1
    while result.more:
        result = read_once(reader, result.cursors, first_sight=False, max_bytes=max_bytes)
        collected += texts(result)
        reads += 1
    return collected, result, reads


def as_unprivileged(work: Callable[[], T]) -> T:
    """Run `work` where file permissions apply: as is for a normal user; as root, in a forked
    child that became `nobody` (root reads every file, so a 0700 folder proves nothing). The
    result travels back pickled; an exception in the child fails the test with its text."""
    if os.geteuid() != 0:
        return work()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read_end)
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            payload = pickle.dumps(("ok", work()))
        except BaseException as error:  # noqa: BLE001 - reported to the parent, whatever it is
            payload = pickle.dumps(("error", f"{type(error).__name__}: {error}"))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    status, value = pickle.loads(data)  # noqa: S301 - our own child's bytes
    if status != "ok":
        raise AssertionError(f"in the unprivileged child: {value}")
    return value  # type: ignore[no-any-return]


def open_folder() -> Path:
    """A temporary folder `nobody` can enter (pytest's own are private to their user)."""
    folder = Path(tempfile.mkdtemp(prefix="memoryd-sources-"))
    folder.chmod(0o755)
    return folder
