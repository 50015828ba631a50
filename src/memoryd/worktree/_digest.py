"""Content digests as memoryd journals and compares them, read without following symlinks, and
the planned write a journal records (a path and the digest it will hold)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from memoryd.errors import PathEscapeError, StoreError
from memoryd.worktree._atomic import TEMP_SUFFIX

# The digest recorded for a path with no file: a read that found nothing, or a planned removal.
ABSENT = "absent"


def content_digest(data: bytes) -> str:
    """The digest memoryd journals and compares: sha256 of the bytes, in hex."""
    return hashlib.sha256(data).hexdigest()


def disk_digest(path: Path) -> str:
    """Digest of what is at `path` now, never following a symlink at its last component.

    A symlink is digested by its target text; a missing path is ABSENT; a folder is an error.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ABSENT
    if stat.S_ISLNK(mode):
        return content_digest(b"symlink:" + os.fsencode(os.readlink(path)))
    if stat.S_ISDIR(mode):
        raise StoreError(f"{path} is a folder where a file was expected")
    return content_digest(read_bytes_nofollow(path))


def read_bytes_nofollow(path: Path) -> bytes:
    """Read a regular file; raise StoreError if the last component is a symlink, and
    PathEscapeError (never blocking) if it is a FIFO, a socket or a device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise StoreError(f"{path} is a symlink; memoryd does not follow links") from error
        if error.errno == errno.ENXIO:  # a socket
            raise PathEscapeError(path, path.parent) from error
        raise
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise PathEscapeError(path, path.parent)
        return handle.read()


def is_temporary(name: str) -> bool:
    """Whether a file name is one of the atomic-write helper's temporary files."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


class PlannedWrite(NamedTuple):
    """A pending disk change: `path` (store-relative) will hold content with this digest.

    `sha256` is ABSENT when the path will be gone (the old place of a moved file)."""

    path: str
    sha256: str
