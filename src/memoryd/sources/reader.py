"""`SourceReader`: one configured source of one agent, read incrementally.

A read walks the source's files in sorted order, reads each from its cursor (see `_files`) until
the byte budget is spent, and returns new conversations plus the cursors to commit. It never
stores anything. Isolation: a bad line is counted and skipped; a file that cannot be read (no
permission, broken gzip, broken export) is reported as a `SkipReport` and logged as
`source.skipped`, keeps its previous cursor, and the other files go on.

Files move: a path whose cursor has no file any more is *forgotten*, unless a newly found file
takes its place — the same device and inode under a new name (rotation), or the same lineage
(a Paperclip run log replaced by its gzipped copy) — in which case reading continues where it
stopped instead of starting over.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import structlog
import zstandard

from memoryd.settings import SourceSettings
from memoryd.sources._files import (
    SKIPPED_STATE,
    FileOutcome,
    ReadArguments,
    ReadOptions,
    placeholder_cursor,
    read_document_file,
    read_line_file,
    unchanged,
)
from memoryd.sources._matching import match_cursors
from memoryd.sources._rotation import rotated_away
from memoryd.sources.cursor import FileCursor, StoredCursors
from memoryd.sources.discovery import Survey, survey
from memoryd.sources.formats import DocumentFormat, LineFormat, MalformedDocumentError
from memoryd.sources.registry import get_format
from memoryd.sources.results import LagReport, ReadResult, ReadStats, SkipReport

__all__ = [
    "DEFAULT_BLOCK_BYTES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "LagReport",
    "ReadResult",
    "ReadStats",
    "SkipReport",
    "SourceReader",
]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
DEFAULT_BLOCK_BYTES = 1024 * 1024

_log = structlog.get_logger(__name__)


class SourceReader:
    """Reads one source (`SourceSettings`) of one agent. See the package docstring for the API."""

    def __init__(
        self,
        agent: str,
        source: SourceSettings,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
    ) -> None:
        self.agent = agent
        self.source = source
        self.format = get_format(source.format)
        self._options = ReadOptions(agent, source.routine, max_line_bytes, block_bytes)

    def files(self) -> list[str]:
        """The files the source names right now, sorted."""
        return self.survey().files

    def survey(self) -> Survey:
        """The files the source names right now, and what the walk refused or could not read."""
        found = survey(self.source.path, self.format.accepts)
        if isinstance(self.format, LineFormat):
            found.files = self.format.select(found.files)
        return found

    def read(
        self,
        cursors: Mapping[str, FileCursor],
        *,
        since: datetime | None,
        first_sight: bool,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> ReadResult:
        """Return what appeared since `cursors`, with the cursors to commit after filing it.

        `first_sight` says the source has never been read: content older than `since` (the
        backfill cutoff, aware UTC; None for everything) is then skipped. At most about
        `max_bytes` are consumed; `more` says whether another read would find more.

        With `StoredCursors`, the files found exactly as their stored cursor's last scan left
        them are listed in `kept` instead of `cursors`: their cursors stand as stored, and are
        not decoded (a read with nothing new decodes none).
        """
        not_before = since if first_sight else None
        stats = ReadStats()
        result = ReadResult(conversations=[], cursors={}, stats=stats)
        statuses: dict[str, os.stat_result] = {}
        found = self.survey()
        self._refused(result, found, cursors)
        for key in found.files:
            try:
                statuses[key] = os.stat(key)
            except FileNotFoundError:
                continue  # gone between the walk and now: nothing to read
            except OSError as error:
                self._skip(result, key, f"cannot stat: {error.strerror or error}")
                self._keep(result, cursors.get(key))
        kept: set[str] = set()
        if isinstance(cursors, StoredCursors):
            # What the loop below would carry over unchanged, known from the stored texts: these
            # files take part in nothing else (no rescue, no move, no adoption).
            kept = {
                key
                for key, status in statuses.items()
                if key not in result.cursors and cursors.unchanged(key, status)
            }
            cursors = cursors.decoded(skip=kept)
        unread = {key: c for key, c in cursors.items() if key not in result.cursors}
        budget = self._rescue(result, statuses, unread, max_bytes)
        moving = {key: s for key, s in statuses.items() if key not in kept} if kept else statuses
        matched = match_cursors(self.format, moving, unread, stats)
        for key, status in statuses.items():
            stats.files_seen += 1
            if key in kept:
                result.kept.append(key)
                continue
            cursor = matched.get(key)
            if cursor is not None and unchanged(cursor, status):
                result.cursors[key] = cursor
                continue
            if budget <= 0:
                result.more = True
                self._defer(result, Path(key), status, cursor, not_before)
                continue
            outcome = self._read_file(
                result,
                path=Path(key),
                status=status,
                cursor=cursor,
                not_before=not_before,
                budget=budget,
            )
            if outcome is None:
                continue
            budget -= max(outcome.consumed, 1)
            stats.add(outcome)
            result.conversations.extend(outcome.conversations)
            result.cursors[key] = outcome.cursor
            if not outcome.at_eof:
                result.more = True
        return result

    def _rescue(
        self,
        result: ReadResult,
        statuses: Mapping[str, os.stat_result],
        unread: dict[str, FileCursor],
        budget: int,
    ) -> int:
        """Read to its end a file rotated away under a name the source does not read.

        A renamed file's cursor is used up here (the file now at its old path is new); a copy
        taken before a truncation is read from the cursor, and the truncated file is then read
        again from the start as usual. Return the budget left.
        """
        fmt = self.format
        if not isinstance(fmt, LineFormat):
            return budget
        for rotated in rotated_away(unread, statuses, lambda key: fmt.compressed(Path(key))):
            if budget <= 0:
                break
            key, path = rotated.key, rotated.path
            outcome = self._read_file(
                result,
                path=Path(path),
                status=rotated.status,
                cursor=rotated.cursor,
                not_before=None,
                budget=budget,
            )
            if outcome is None:
                continue
            _log.info(
                "source.rotated_read",
                path=key,
                rotated_to=path,
                renamed=rotated.renamed,
                turns=sum(len(c.turns) for c in outcome.conversations),
                agent=self.agent,
                format=fmt.name,
            )
            budget -= max(outcome.consumed, 1)
            result.stats.add(outcome)
            result.conversations.extend(outcome.conversations)
            if not outcome.at_eof:
                result.more = True
                result.cursors[path] = outcome.cursor
            if rotated.renamed or key == path:
                del unread[key]
        return budget

    def lag(self, cursors: Mapping[str, FileCursor]) -> dict[str, int]:
        """Bytes of each current file not read yet (for `memoryd status`); never opens a file.

        A half-written last line counts: it is not read yet.
        """
        return self.lag_report(cursors).lags

    def lag_report(self, cursors: Mapping[str, FileCursor]) -> LagReport:
        """`lag`, with the files and folders the source cannot read (and why)."""
        found = self.survey()
        report = LagReport(
            lags={},
            skipped=[SkipReport(path, reason) for path, reason in found.skipped],
            unreadable=found.unreadable,
        )
        lags = report.lags
        for key in found.files:
            if not os.access(key, os.R_OK):  # status only: a heartbeat finds out by reading
                report.skipped.append(SkipReport(key, "cannot read the file: permission denied"))
            noted = cursors[key].state.get(SKIPPED_STATE) if key in cursors else None
            if isinstance(noted, dict):
                report.skipped.extend(
                    SkipReport(key, f"{reason} ({count} so far)") for reason, count in noted.items()
                )
            try:
                status = os.stat(key)
            except OSError:
                continue
            cursor = cursors.get(key)
            if cursor is None:
                lags[key] = status.st_size
            elif isinstance(self.format, DocumentFormat) or self.format.compressed(Path(key)):
                # Positions in these are not file offsets: either all read or not.
                lags[key] = 0 if unchanged(cursor, status) else status.st_size
            elif (cursor.identity.device, cursor.identity.inode) != (
                status.st_dev,
                status.st_ino,
            ) or status.st_size < cursor.position:
                lags[key] = status.st_size
            else:
                lags[key] = status.st_size - cursor.position
        return report

    def _refused(
        self, result: ReadResult, found: Survey, cursors: Mapping[str, FileCursor]
    ) -> None:
        """Log what the walk refused; keep the cursors of files it could not look at.

        A file in a folder that cannot be listed (or in an unreadable source) is not gone: its
        cursor is carried over unchanged, so nothing is read twice when it can be read again.
        """
        hidden: list[str] = []
        if found.unreadable is not None:
            result.unreadable = found.unreadable
            self._skip(result, self.source.path, f"cannot read the source: {found.unreadable}")
            hidden.append("")
        for path, reason in found.skipped:
            self._skip(result, path, reason)
            hidden.append(path.rstrip(os.sep) + os.sep)
        if hidden:
            for key, cursor in cursors.items():
                if any(key.startswith(prefix) for prefix in hidden):
                    self._keep(result, cursor)

    def _read_file(  # noqa: PLR0917 - private; called once, with keywords
        self,
        result: ReadResult,
        path: Path,
        status: os.stat_result,
        cursor: FileCursor | None,
        not_before: datetime | None,
        budget: int,
    ) -> FileOutcome | None:
        fmt = self.format
        arguments = ReadArguments(path, status, cursor, not_before, self._options, budget)
        try:
            if isinstance(fmt, DocumentFormat):
                outcome = read_document_file(fmt, arguments)
            else:
                outcome = read_line_file(fmt, arguments)
        except (
            OSError,
            EOFError,
            zlib.error,
            gzip.BadGzipFile,
            zstandard.ZstdError,
            MalformedDocumentError,
        ) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            self._skip(result, str(path), reason or type(error).__name__)
            self._keep(result, cursor)
            return None
        if outcome.restarted is not None:
            _log.info(
                "source.restarted",
                path=str(path),
                reason=outcome.restarted,
                agent=self.agent,
                format=fmt.name,
            )
        for reason, count in sorted(outcome.skipped.items()):
            _log.warning(
                "source.skipped",
                path=str(path),
                reason=reason,
                records=count,
                agent=self.agent,
                format=fmt.name,
            )
        if outcome.malformed:
            _log.info(
                "source.lines_skipped",
                path=str(path),
                malformed=outcome.malformed,
                too_long=outcome.long_lines,
                agent=self.agent,
                format=fmt.name,
            )
        if outcome.long_lines:
            # Text of a conversation that will never be filed: the operator should know
            # (`memoryd status` lists it too, `memoryd.heartbeat.committing`).
            result.dropped[str(path)] = result.dropped.get(str(path), 0) + outcome.long_lines
            _log.warning(
                "source.line_dropped",
                path=str(path),
                lines=outcome.long_lines,
                max_line_bytes=self._options.max_line_bytes,
                agent=self.agent,
                format=fmt.name,
            )
        return outcome

    def _defer(
        self,
        result: ReadResult,
        path: Path,
        status: os.stat_result,
        cursor: FileCursor | None,
        not_before: datetime | None,
    ) -> None:
        """Keep a file for the next read; a new file of a new source remembers the cutoff."""
        if cursor is not None:
            result.cursors[str(path)] = cursor
        elif not_before is not None:
            try:
                result.cursors[str(path)] = placeholder_cursor(path, status, not_before)
            except OSError as error:
                self._skip(result, str(path), error.strerror or str(error))

    def _keep(self, result: ReadResult, cursor: FileCursor | None) -> None:
        """Carry a cursor over unchanged (its file could not be read this time)."""
        if cursor is not None:
            result.cursors[cursor.path] = cursor

    def _skip(self, result: ReadResult, path: str, reason: str) -> None:
        result.skipped.append(SkipReport(path, reason))
        _log.warning(
            "source.skipped",
            path=path,
            reason=reason,
            agent=self.agent,
            format=self.format.name,
        )
