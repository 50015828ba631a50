"""Whether a source path has the shape its format reads, for `memoryd check`.

The readers take a file, a folder (walked) or a glob for every format, but two formats have one
right shape: a `claude-code` source is Claude Code's projects folder (or one project's folder),
whose sessions keep their subagents in sub-folders, so a single file loses them; a
`chatgpt-export` source is the export's `conversations.json`, and walking the export's folder
would read its other JSON files (`user.json`, `message_feedback.json`, ...) as conversations.

A glob whose fixed part (the folders before its first wildcard) cannot be entered is unreadable,
not "nothing matches yet": `glob` says nothing about the folders it could not read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# The shape each format needs, and what to name instead.
_FOLDER_ONLY = {"claude-code": "name the projects folder (~/.claude/projects) or one project's"}
_FILE_ONLY = {"chatgpt-export": "name the export's conversations.json file"}
_WILDCARDS = "*?["


def shape_problem(format_name: str, path: str) -> str | None:
    """What is wrong with the shape of an existing, non-glob source path; None when nothing is
    (or when the path is missing or unreadable: the configuration check reports those)."""
    if any(ch in path for ch in _WILDCARDS):
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if format_name in _FOLDER_ONLY and not stat.S_ISDIR(mode):
        fix = _FOLDER_ONLY[format_name]
        return f"{path} is not a folder, and a {format_name} source is one: {fix}"
    if format_name in _FILE_ONLY and stat.S_ISDIR(mode):
        return (
            f"{path} is a folder, and a {format_name} source is a file: {_FILE_ONLY[format_name]}"
        )
    return None


def unreadable_glob(path: str) -> str | None:
    """For a glob: the folder before its first wildcard when it exists but cannot be listed or
    entered (or a folder above it cannot be entered), with the reason; None otherwise."""
    if not any(ch in path for ch in _WILDCARDS):
        return None
    fixed: list[str] = []
    for part in Path(path).parts:
        if any(ch in part for ch in _WILDCARDS):
            break
        fixed.append(part)
    if not fixed:
        return None
    folder = Path(*fixed)
    try:
        is_dir = stat.S_ISDIR(os.stat(folder).st_mode)
    except FileNotFoundError:
        return None
    except OSError as error:  # a folder above it cannot be entered (a 0700 home)
        return f"{folder} cannot be reached: {error.strerror or error}"
    if is_dir and not os.access(folder, os.R_OK | os.X_OK):
        return f"{folder} cannot be listed"
    return None
