"""Find the transcript files a configured source path names.

A source path is a file (read whatever its name), a directory (walked, keeping the files its
format accepts; symlinked directories are not followed, so a link cannot loop the walk or lead
out of the tree) or a glob (`**` recursive; matches filtered by the format too). A path that does
not exist yet yields nothing: agents create their folders on first run. The result is sorted, so
reading order, and with it every output, is deterministic.

Paths are plain strings here: a heartbeat walks thousands of files, and building `Path` objects
for each of them cost more than the system calls (measured by benchmarks/bench_sources.py).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable

# accepts(folder, name) -> whether the file holds transcripts of the source's format
Accepts = Callable[[str, str], bool]

_GLOB_CHARACTERS = frozenset("*?[")
_SKIPPED_DIRECTORIES = frozenset({".git", "__pycache__"})


def is_glob(spec: str) -> bool:
    return any(character in _GLOB_CHARACTERS for character in spec)


def discover(spec: str, accepts: Accepts) -> list[str]:
    """Return the files under `spec` that `accepts` keeps, sorted."""
    spec = os.path.expanduser(spec)
    if is_glob(spec):
        found = []
        for match in glob.glob(spec, recursive=True):
            folder, name = os.path.split(match)
            if os.path.isfile(match) and accepts(folder, name):
                found.append(match)
        return sorted(found)
    if os.path.isfile(spec):
        return [spec]
    if not os.path.isdir(spec):
        return []
    found = []
    pending = [spec.rstrip(os.sep) or os.sep]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # an unreadable sub-folder hides only itself
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIPPED_DIRECTORIES:
                    pending.append(entry.path)
            elif entry.is_file() and accepts(folder, entry.name):
                found.append(entry.path)
    return sorted(found)
