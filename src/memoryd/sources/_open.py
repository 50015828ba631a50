"""Opening a transcript file: never blocking on a special file, decompressing when asked."""

from __future__ import annotations

import errno
import gzip
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import zstandard


def open_regular(path: Path) -> BinaryIO:
    """Open a file for reading only if it is a regular file; raise OSError otherwise.

    The open never blocks: a FIFO put where a transcript was (after the walk checked it) would
    otherwise wait for a writer for ever. O_NONBLOCK means nothing to a regular file.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        regular = stat.S_ISREG(os.fstat(descriptor).st_mode)
    except OSError:
        os.close(descriptor)
        raise
    if not regular:
        os.close(descriptor)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(descriptor, "rb")


@contextmanager
def open_content(path: Path, compressed: bool) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Yield (raw file, stream of content); the content is decompressed for a compressed file
    (gzip, or zstd for a `.zst` name)."""
    with open_regular(path) as raw:
        if compressed and path.name.endswith(".zst"):
            with zstandard.ZstdDecompressor().stream_reader(raw, closefd=False) as stream:
                yield raw, stream  # read-only; seeks forward only, which is all a scan does
        elif compressed:
            with gzip.GzipFile(fileobj=raw, mode="rb") as content:
                yield raw, content  # type: ignore[misc]  # GzipFile is a BinaryIO in practice
        else:
            yield raw, raw
