"""Group read on an agent's own transcripts, so that memoryd running as another user reads them.

Claude Code writes every session file mode 0600, whatever the umask, and the mask of a file's
ACL follows its group bits: neither membership in the agent's group nor a default ACL for the
`memoryd` user lets memoryd read it. `share` is what the agent's user runs (every minute, from
`memoryd-share.timer`) to add the group's read bit to each such file:

- on a file without an ACL, the file's group (the agent's own group, which the `memoryd` user
  joins) may read it; on a file with an ACL, chmod sets the ACL mask, so exactly the named
  entries the operator granted (`u:memoryd:rX`) become effective, and the owning group's own
  entry stays what it was;
- read for files, read and search for folders below the source's root; never write, never
  anything for others, never a file of another user, never through a symlink (each file is
  opened with `O_NOFOLLOW` and changed through that descriptor, so a name swapped for a link
  after the walk changes nothing);
- idempotent and cheap: a file that already has the bit costs one `lstat`, nothing else.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["ShareReport", "share_files"]

_FILE_BITS = stat.S_IRGRP
_FOLDER_BITS = stat.S_IRGRP | stat.S_IXGRP
# Open without following a link, without blocking on a FIFO, without taking a terminal.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass
class ShareReport:
    """What one `share_files` call did, for the command's summary and its log event."""

    shared: int = 0  # the bits were added now
    already: int = 0  # had them already: nothing done
    foreign: int = 0  # another user's: left alone
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)

    def merge(self, other: ShareReport) -> None:
        self.shared += other.shared
        self.already += other.already
        self.foreign += other.foreign
        self.failed.extend(other.failed)


def share_files(root: str, files: Iterable[str], *, owner: int) -> ShareReport:
    """Given a source's root folder and the files found under it, add group read to each file
    owned by `owner` (and group read and search to each folder between it and `root`, `root`
    included). Return what was done; a file that vanished meanwhile is not reported."""
    report = ShareReport()
    folders: set[str] = set()
    root = root.rstrip(os.sep) or os.sep
    for path in files:
        _share_one(path, _FILE_BITS, owner, report, regular=True)
        folder = os.path.dirname(path)
        while folder not in folders and _inside(folder, root):
            folders.add(folder)
            if folder == root:
                break
            folder = os.path.dirname(folder)
    for folder in sorted(folders):
        _share_one(folder, _FOLDER_BITS, owner, report, regular=False)
    return report


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def _share_one(path: str, bits: int, owner: int, report: ShareReport, *, regular: bool) -> None:
    status = _needs_bits(path, bits, owner, report, regular=regular)
    if status is None:
        return
    try:
        descriptor = os.open(path, _OPEN_FLAGS | (0 if regular else os.O_DIRECTORY))
    except FileNotFoundError:
        return
    except OSError as error:
        reason = "it became a link" if error.errno == errno.ELOOP else error.strerror
        report.failed.append((path, reason or str(error)))
        return
    try:
        current = os.fstat(descriptor)
        # Checked again on what was opened: the name may now be another file.
        if (current.st_dev, current.st_ino, current.st_uid) != (
            status.st_dev,
            status.st_ino,
            owner,
        ):
            report.foreign += 1
            return
        os.fchmod(descriptor, stat.S_IMODE(current.st_mode) | bits)
        report.shared += 1
    except OSError as error:
        report.failed.append((path, error.strerror or str(error)))
    finally:
        os.close(descriptor)


def _needs_bits(
    path: str, bits: int, owner: int, report: ShareReport, *, regular: bool
) -> os.stat_result | None:
    """The `lstat` of `path` when it is the caller's file (or folder) and lacks `bits`; None
    otherwise, with the reason counted."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        report.failed.append((path, error.strerror or str(error)))
        return None
    if not (stat.S_ISREG(status.st_mode) if regular else stat.S_ISDIR(status.st_mode)):
        return None  # a link or a special file: the walk reads links only to files it also finds
    if status.st_uid != owner:
        report.foreign += 1
        return None
    if status.st_mode & bits == bits:
        report.already += 1
        return None
    return status
