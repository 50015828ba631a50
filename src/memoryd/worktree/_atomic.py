"""Crash-safe file writes: the one place the store writes file contents.

A write goes to a temporary file in the same folder, is flushed and fsynced, then renamed over
the target with `os.replace` (atomic on POSIX), and the folder is fsynced so the rename itself
survives a power loss. A reader therefore sees the old bytes or the new bytes, never a mix.
Temporary files are named `.<name>.<random>.tmp`; `sweep_temporaries` removes ones a crash left.
A file gets the permissions the umask gives a new file (`0640` under the unit's `UMask=0027`),
like a file any tool creates, unless a mode is asked for.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@functools.cache
def process_umask() -> int:
    """This process's umask (read from /proc, which leaves it alone; else set and restored)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode(executable: bool = False) -> int:
    """The permissions the umask gives a new file (module docstring)."""
    return (0o777 if executable else 0o666) & ~process_umask()


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically, creating parent folders as needed; `mode`
    defaults to what the umask gives a new file."""
    mode = new_file_mode() if mode is None else mode
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        fsync_directory(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    """Replace `path` with `text` encoded as UTF-8, atomically."""
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def sweep_temporaries(root: Path) -> list[Path]:
    """Remove temporary files an interrupted write left under `root`; return what was removed."""
    removed = []
    for path in root.rglob(f".*{TEMP_SUFFIX}"):
        if ".git" in path.relative_to(root).parts or not path.is_file():
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed
