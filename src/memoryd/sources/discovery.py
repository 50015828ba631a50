"""Find the transcript files a configured source path names, without ever leaving it.

A source path is a file (read whatever its name), a directory (walked, keeping the files its
format accepts) or a glob (`*`, `?`, `[...]` per path segment, `**` for any depth; walked from
its fixed leading folder and filtered by the format too). A path that does not exist yet yields
nothing: agents create their folders on first run. The result is sorted, so reading order, and
with it every output, is deterministic.

Safety rules (the *root* is the configured folder, or a glob's fixed leading folder):
- Symlinked folders are never followed, so a link cannot loop the walk or lead out of the tree.
- A symlinked file is kept only when it resolves to a regular file inside the root (and is not
  found there under its own name already); a link leading out of the root, a dangling-in-a-loop
  link and a link to a special file are reported, never opened.
- Only regular files are kept: a FIFO, socket or device with a transcript's name is reported
  (opening a FIFO would block the reader for ever).
- A sub-folder that cannot be listed hides only itself and is reported; a root that cannot be
  read is reported as such (`Survey.unreadable`), never taken for an empty source.

Paths are plain strings here: a heartbeat walks thousands of files, and building `Path` objects
for each of them cost more than the system calls (measured by benchmarks/bench_sources.py).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

# accepts(folder, name) -> whether the file holds transcripts of the source's format
Accepts = Callable[[str, str], bool]

_GLOB_CHARACTERS = frozenset("*?[")
_SKIPPED_DIRECTORIES = frozenset({".git", "__pycache__"})
LINK_OUTSIDE = "symlink leads out of the source folder; not followed"
LINK_LOOP = "symlink loop; not followed"
NOT_REGULAR = "not a regular file"


@dataclass
class Survey:
    """What a walk of one source path found."""

    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    unreadable: str | None = None  # why the source path itself cannot be read


def is_glob(spec: str) -> bool:
    return any(character in _GLOB_CHARACTERS for character in spec)


def source_root(spec: str) -> str:
    """The folder a walk of `spec` never leaves: a glob's fixed leading folder, else `spec`
    itself (a folder, or a single file), `~` expanded."""
    spec = os.path.expanduser(spec)
    if is_glob(spec):
        return _split_glob(spec)[0]
    return spec.rstrip(os.sep) or os.sep


def discover(spec: str, accepts: Accepts) -> list[str]:
    """Return the files under `spec` that `accepts` keeps, sorted."""
    return survey(spec, accepts).files


def survey(spec: str, accepts: Accepts) -> Survey:
    """Walk `spec` (see the module docstring) and say what was found and what was refused."""
    spec = os.path.expanduser(spec)
    result = Survey()
    if is_glob(spec):
        root, pattern = _split_glob(spec)
        walker = _Walker(root, accepts, result)
        if walker.open_root():
            walker.glob(root, pattern, 0)
            walker.finish()
        return result
    try:
        status = os.stat(spec)
    except FileNotFoundError:
        return result  # not created yet
    except OSError as error:
        result.unreadable = _reason(error)
        return result
    if stat.S_ISREG(status.st_mode):
        result.files.append(spec)
        return result
    if not stat.S_ISDIR(status.st_mode):
        result.unreadable = NOT_REGULAR + " or folder"
        return result
    walker = _Walker(spec.rstrip(os.sep) or os.sep, accepts, result)
    if walker.open_root():
        walker.walk()
        walker.finish()
    return result


def _reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return LINK_LOOP
    return error.strerror or str(error)


def _split_glob(spec: str) -> tuple[str, list[str]]:
    """The fixed leading folder of a glob and the pattern segments below it."""
    segments = spec.split(os.sep)
    fixed: list[str] = []
    for segment in segments:
        if is_glob(segment):
            break
        fixed.append(segment)
    root = os.sep.join(fixed) or (os.sep if spec.startswith(os.sep) else ".")
    if spec.startswith(os.sep) and not root.startswith(os.sep):
        root = os.sep + root
    return root, [segment for segment in segments[len(fixed) :] if segment]


class _Walker:
    """One walk below `root`: collects files, refusals and symlinked files to check."""

    def __init__(self, root: str, accepts: Accepts, result: Survey) -> None:
        self.root = root
        self.accepts = accepts
        self.result = result
        self.links: list[str] = []
        self._listing: dict[str, list[os.DirEntry[str]]] = {}
        real = os.path.realpath(root)
        self._inside = real if real.endswith(os.sep) else real + os.sep
        self._real_root = real

    def open_root(self) -> bool:
        try:
            self._listing[self.root] = list(os.scandir(self.root))
        except FileNotFoundError:
            return False
        except OSError as error:
            self.result.unreadable = _reason(error)
            return False
        return True

    def _entries(self, folder: str) -> list[os.DirEntry[str]]:
        entries = self._listing.get(folder)
        if entries is None:
            try:
                entries = list(os.scandir(folder))
            except FileNotFoundError:
                entries = []  # removed during the walk
            except OSError as error:
                self.result.skipped.append((folder, "cannot list folder: " + _reason(error)))
                entries = []
            self._listing[folder] = entries
        return entries

    def walk(self) -> None:
        pending = [self.root]
        while pending:
            folder = pending.pop()
            for entry in self._entries(folder):
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIPPED_DIRECTORIES:
                        pending.append(entry.path)
                else:
                    self._consider(folder, entry)

    def glob(self, folder: str, pattern: list[str], index: int) -> None:
        if index >= len(pattern):
            return
        segment = pattern[index]
        last = index == len(pattern) - 1
        if segment == "**":
            if last:
                self._walk_from(folder)
                return
            self.glob(folder, pattern, index + 1)
            for entry in self._entries(folder):
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                    self.glob(entry.path, pattern, index)
            return
        for entry in self._entries(folder):
            if not _segment_matches(entry.name, segment):
                continue
            if last:
                if not entry.is_dir(follow_symlinks=False):
                    self._consider(folder, entry)
            elif entry.is_dir(follow_symlinks=False):
                self.glob(entry.path, pattern, index + 1)

    def _walk_from(self, folder: str) -> None:
        pending = [folder]
        while pending:
            current = pending.pop()
            for entry in self._entries(current):
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    self._consider(current, entry)

    def _consider(self, folder: str, entry: os.DirEntry[str]) -> None:
        if not self.accepts(folder, entry.name):
            return
        if entry.is_symlink():
            self.links.append(entry.path)
        elif entry.is_file(follow_symlinks=False):
            self.result.files.append(entry.path)
        else:
            self.result.skipped.append((entry.path, NOT_REGULAR))

    def finish(self) -> None:
        """Keep the symlinked files that stay inside the root; sort."""
        if self.links:
            here = {self._real_of(path) for path in self.result.files}
            for link in sorted(self.links):
                target = os.path.realpath(link)
                if not (target == self._real_root or target.startswith(self._inside)):
                    self.result.skipped.append((link, LINK_OUTSIDE))
                    continue
                try:
                    status = os.stat(link)
                except FileNotFoundError:
                    continue  # dangling: nothing to read
                except OSError as error:
                    self.result.skipped.append((link, _reason(error)))
                    continue
                if not stat.S_ISREG(status.st_mode):
                    self.result.skipped.append((link, NOT_REGULAR))
                elif target not in here:
                    here.add(target)
                    self.result.files.append(link)
        self.result.files = sorted(set(self.result.files))
        self.result.skipped = sorted(set(self.result.skipped))

    def _real_of(self, path: str) -> str:
        # Files found by the walk are not links and sit below root through real folders.
        return self._real_root.rstrip(os.sep) + path[len(self.root.rstrip(os.sep)) :]


def _segment_matches(name: str, segment: str) -> bool:
    if name.startswith(".") and not segment.startswith("."):
        return False  # as glob: a wildcard does not match a hidden name
    return fnmatch.fnmatchcase(name, segment)
