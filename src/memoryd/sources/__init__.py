"""Transcript sources: incremental readers for the agents' log formats, and text cleaning.

Reading API
-----------
One `SourceReader` per configured source (`[[agents.sources]]`, `memoryd.settings.SourceSettings`)::

    reader = SourceReader(agent="chief-of-staff", source=source_settings)
    result = reader.read(cursors, since=cutoff, first_sight=not cursors)
    # ... clean, extract and file result.conversations, git commit ...
    store_cursors(result.cursors)          # only now: the read itself persists nothing

- `cursors` maps a file path to its `FileCursor` (a frozen dataclass; `to_json()` /
  `FileCursor.from_json()` give canonical JSON for the state database). Pass the cursors the last
  committed read returned; `result.cursors` *replaces* them: it holds one cursor per file the
  source names now, and a deleted file's cursor is simply absent (forgotten). A file with
  nothing new keeps the very cursor object it came with (`is`), so a caller can skip storing it.
- `since` is the backfill cutoff (aware UTC, or None for everything) and only applies when
  `first_sight` is true, i.e. the source has never been read: older content is then skipped.
- `max_bytes` bounds one read (default 16 MiB). `result.more` says whether the budget ran out
  before everything new was read; call `read` again with `result.cursors` to go on.
- `result.conversations`: `model.Conversation`s with the new turns only, in file order, files in
  path order; roles user/assistant/tool, tool output kept whole and marked `trusted=False`,
  thinking, images and base64 documents already dropped. Cleaning (secret redaction, excerpting
  tool output) is the caller's next step (`sources.clean`).
- `result.skipped`: `SkipReport(path, reason)` for each file that could not be read (also logged
  as `source.skipped`); such a file keeps its old cursor and is tried again next time.
- `result.stats`: `ReadStats` counts (files, bytes, lines, malformed and over-long lines,
  duplicates dropped, turns dropped as older than the backfill cutoff, restarted files).
- `result.unreadable`: why the source path itself could not be read (its cursors are carried
  over unchanged), else None. Links out of the source folder, special files and folders that
  cannot be listed are refused by the walk (`discovery`) and reported in `result.skipped`;
  records a decoder could not read are counted, logged and kept in the file's cursor state.
- `reader.lag(cursors)` gives, per file, the bytes not read yet (for `memoryd status`);
  `reader.lag_report(cursors)` adds what cannot be read; `reader.files()` lists the files the
  source names now.

Cost: a read with nothing new stats every file of the source and opens none (about 5 us per
file); new bytes cost their parsing. Figures: BENCHMARKS.md, "Sources".

Guarantees: only complete lines are consumed (a line holding two JSON records gives both); a
file that was truncated, rewritten in place or replaced is read again from the start without
yielding anything twice; a rotated file (same inode, new name) or a Paperclip log replaced by its
gzip (a Codex rollout by its `.zst`) is followed, not re-read, and the unread end of a file
rotated to a name the source does not read, or copied before a truncation, is read from the
rotated copy; memory stays bounded
(lines stream in blocks, over-long lines are skipped unread, a ChatGPT export is parsed one
conversation at a time). The one permitted difference from reading a whole file at once: a branch
abandoned by a rewind after it was read cannot be taken back, and a message split across two
reads may come as two turns.

Formats (registry `FORMATS`, config `format`): claude-code, codex, openclaw, paperclip,
chatgpt-export, jsonl, markdown (aider's history included); each module's docstring states its
rules.
"""

from memoryd.sources.cursor import CursorError, FileCursor, FileIdentity
from memoryd.sources.reader import ReadResult, ReadStats, SkipReport, SourceReader
from memoryd.sources.registry import FORMATS, UnknownFormatError, get_format

__all__ = [
    "FORMATS",
    "CursorError",
    "FileCursor",
    "FileIdentity",
    "ReadResult",
    "ReadStats",
    "SkipReport",
    "SourceReader",
    "UnknownFormatError",
    "get_format",
]
