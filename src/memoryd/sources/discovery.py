"""Find the transcript files a configured source path names.

A source path is a file (read whatever its name), a directory (walked, keeping the files its
format accepts; symlinked directories are not followed, so a link cannot loop the walk or lead
out of the tree) or a glob (`**` recursive; matches filtered by the format too). A path that does
not exist yet yields nothing: agents create their folders on first run. The result is sorted, so
reading order, and with it every output, is deterministic.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from pathlib import Path

_GLOB_CHARACTERS = frozenset("*?[")
_SKIPPED_DIRECTORIES = frozenset({".git", "__pycache__"})


def is_glob(spec: str) -> bool:
    return any(character in _GLOB_CHARACTERS for character in spec)


def discover(spec: str, accepts: Callable[[Path], bool]) -> list[Path]:
    """Return the files under `spec` that `accepts` keeps, sorted by path."""
    if is_glob(spec):
        matches = (Path(match) for match in glob.glob(os.path.expanduser(spec), recursive=True))
        return sorted(path for path in matches if path.is_file() and accepts(path))
    root = Path(spec).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    found: list[Path] = []
    for folder, directories, files in os.walk(root, followlinks=False):
        directories[:] = sorted(d for d in directories if d not in _SKIPPED_DIRECTORIES)
        base = Path(folder)
        found.extend(base / name for name in files if accepts(base / name))
    return sorted(found)
