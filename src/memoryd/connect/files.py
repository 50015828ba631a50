"""Reading, editing and writing the runtimes' own configuration files, safely.

Every runtime module plans its work as `FileEdit`s (a file's text before and after); this module
reads the files (refusing a symlink or anything not a plain file, so an edit never lands outside
the path the runtime reads), parses JSON keeping the user's key order, edits marked Markdown
blocks, renders unified diffs for `--dry-run`, and applies the edits: a backup of each changed
file next to it (`FILE.memoryd-backup`, the text before memoryd's latest change), then an atomic
write (a temporary file in the same folder, renamed over the old one, its mode kept).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import AgentConfigError

BACKUP_SUFFIX = ".memoryd-backup"
BLOCK_BEGIN = "<!-- memoryd:begin (added by `memoryd connect`; `memoryd disconnect` removes it) -->"
BLOCK_END = "<!-- memoryd:end -->"
NEW_FILE_MODE = 0o644


@dataclass(frozen=True)
class FileEdit:
    """One file's text before and after an edit; None means the file is absent (or removed)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def action(self) -> str:
        if not self.changed:
            return "unchanged"
        if self.before is None:
            return "created"
        return "removed" if self.after is None else "updated"

    def diff(self) -> str:
        """The unified diff of the edit ("" when nothing changes)."""
        before = (self.before or "").splitlines(keepends=True)
        after = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            before,
            after,
            fromfile="/dev/null" if self.before is None else str(self.path),
            tofile="/dev/null" if self.after is None else str(self.path),
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def read_text(path: Path) -> str | None:
    """The text of `path`, or None when it does not exist. Raise AgentConfigError for a symlink,
    something not a plain file, or text that is not UTF-8."""
    try:
        status = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(status.st_mode):
        raise AgentConfigError(path, "is a symbolic link; memoryd edits only plain files")
    if not stat.S_ISREG(status.st_mode):
        raise AgentConfigError(path, "is not a plain file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise AgentConfigError(path, f"is not UTF-8 text ({error.reason})") from error


def load_json_object(path: Path, text: str | None) -> dict[str, Any]:
    """The JSON object in `text` (an empty one for an absent or blank file), in file order.
    Raise AgentConfigError naming the line and column of a parse error."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise AgentConfigError(
            path, f"is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from error
    if not isinstance(data, dict):
        raise AgentConfigError(path, f"holds a JSON {type(data).__name__}, not an object")
    return data


def dump_json(data: dict[str, Any], before: str | None, path: Path) -> str | None:
    """`data` as JSON text, in the file's own indentation (two spaces for a new file). The
    original bytes when nothing changed (key order included), and the backup's bytes when the
    edit gives back exactly what the backup holds (so a disconnect restores the user's own
    formatting); None (remove the file) when the edit leaves an empty object of a file that had
    content."""
    if before is None or not before.strip():
        if not data:
            return before
    elif _same_json(before, data):
        return before
    backup = backup_text(path)
    if backup is not None and backup.strip() and _same_json(backup, data):
        return backup
    if not data:
        return None
    newline = "" if before is not None and before.strip() and not before.endswith("\n") else "\n"
    return json.dumps(data, indent=_indent_of(before), ensure_ascii=False) + newline


def _same_json(text: str, data: dict[str, Any]) -> bool:
    """Whether `text` holds exactly `data`, key order included."""
    try:
        return bool(json.dumps(json.loads(text)) == json.dumps(data))
    except json.JSONDecodeError:
        return False


def backup_text(path: Path) -> str | None:
    try:
        return read_text(path.with_name(path.name + BACKUP_SUFFIX))
    except AgentConfigError:
        return None


def _indent_of(text: str | None) -> int | str:
    """The indentation of the file's first indented line (two spaces for a new file), so that
    the user's own formatting survives an edit and its undoing."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            indent = line[: len(line) - len(stripped)]
            return indent if "\t" in indent else len(indent)
    return 2


def json_section(data: dict[str, Any], path: Path, key: str) -> dict[str, Any]:
    """The object under `key` of `data`, created empty when absent. Raise AgentConfigError when
    the key holds something else."""
    section = data.setdefault(key, {})
    if not isinstance(section, dict):
        raise AgentConfigError(path, f"'{key}' is a {type(section).__name__}, not an object")
    return section


def drop_if_empty(data: dict[str, Any], key: str) -> None:
    if key in data and data[key] in ({}, []):
        del data[key]


def with_block(text: str | None, body: str) -> str:
    """`text` with memoryd's marked block holding `body`: replaced in place when present,
    appended (after a blank line) when not."""
    block = f"{BLOCK_BEGIN}\n{body.rstrip()}\n{BLOCK_END}\n"
    current = text or ""
    span = _block_span(current)
    if span is not None:
        start, end = span
        return current[:start] + block + current[end:]
    if not current:
        return block
    # One blank line before the block, always added (and always taken out by `without_block`).
    separator = "\n" if current.endswith("\n") else "\n\n"
    return current + separator + block


def without_block(text: str | None) -> str | None:
    """`text` without memoryd's marked block (and the blank line `with_block` put before it);
    None when nothing else is left."""
    if text is None:
        return None
    span = _block_span(text)
    if span is None:
        return text
    start, end = span
    head, tail = text[:start], text[end:]
    if not tail and head.endswith("\n\n"):
        head = head[:-1]
    rest = head + tail
    return rest if rest.strip() else None


def without_block_restored(path: Path, text: str | None) -> str | None:
    """`without_block`, giving back the backup's bytes when they differ from the result only
    by the trailing newlines `with_block` had to add (a file that did not end with one)."""
    rest = without_block(text)
    backup = backup_text(path)
    if rest is not None and backup is not None and backup.rstrip("\n") == rest.rstrip("\n"):
        return backup
    return rest


def has_block(text: str | None) -> bool:
    return text is not None and _block_span(text) is not None


def _block_span(text: str) -> tuple[int, int] | None:
    start = text.find(BLOCK_BEGIN)
    if start < 0:
        return None
    end = text.find(BLOCK_END, start)
    if end < 0:
        return None
    end += len(BLOCK_END)
    if text.startswith("\n", end):
        end += 1
    return start, end


def apply_edits(edits: list[FileEdit]) -> list[Path]:
    """Write every changed edit, each file's old text first saved as `FILE.memoryd-backup`;
    return the backups written. A file whose `after` is None is removed."""
    backups: list[Path] = []
    for edit in edits:
        if not edit.changed:
            continue
        mode = NEW_FILE_MODE
        if edit.before is not None:
            mode = stat.S_IMODE(edit.path.stat().st_mode)
            backup = edit.path.with_name(edit.path.name + BACKUP_SUFFIX)
            write_atomically(backup, edit.before, mode)
            backups.append(backup)
        if edit.after is None:
            edit.path.unlink(missing_ok=True)
            _remove_if_empty(edit.path.parent)
        else:
            edit.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(edit.path, edit.after, mode)
    return backups


def write_atomically(path: Path, text: str, mode: int) -> None:
    """Write `text` to `path` through a temporary file in the same folder and a rename, so a
    reader sees the old file or the new one, never half of one."""
    if path.is_symlink():
        raise AgentConfigError(path, "is a symbolic link; memoryd edits only plain files")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _remove_if_empty(folder: Path) -> None:
    """Remove `folder` when the file just removed was its last (e.g. a skill's own folder)."""
    with contextlib.suppress(OSError):
        folder.rmdir()
