"""Per-file reading positions: what a reader remembers about a file between heartbeats.

A `FileCursor` is a plain value. Reading never stores one: the reader returns new cursors and the
caller persists them only after its git commit, so a heartbeat killed half-way re-reads the same
bytes next time. Cursors serialize to canonical JSON (sorted keys, no spaces), so the same cursor
always gives the same bytes.

Invariants:
- `position` is the offset just past the last complete line consumed (for a gzipped file, an
  offset into the decompressed stream); a half-written last line is never consumed.
- `identity` says which file the position belongs to: device, inode and the SHA-256 of the first
  `head_length` bytes. A different inode, a shrunken file or a changed head means the position no
  longer applies and the file is read again from the start, de-duplicated against `seen`.
- `seen` holds short digests of the most recent record keys, at most `SEEN_LIMIT` (12 hex
  characters each: 48 bits, so that a new record is practically never taken for one seen
  before); `horizon` is
  at least the newest timestamp among keys that fell out of it (exact per read: `seen_batches`
  keeps, per read still represented in `seen`, how many keys it added and its newest time; a
  batch partly evicted counts whole). Both bound the cursor's size while still recognising
  records already yielded when a file is read again.

Format version 2 stores `seen` as one base64 string of the digests' bytes (6 bytes a digest,
8 characters in the text) instead of a list of hex strings (15 characters each): a transcript
file's cursor is mostly these digests, and there is one cursor per file in the state database.
Version 1 cursors are still read; a cursor is written again, as version 2, when its file next
changes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from memoryd.errors import MemorydError

HEAD_BYTES = 4096
SEEN_LIMIT = 512
_FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
_DIGEST_HEX = 12  # characters of a `key_digest`
_DIGEST_BYTES = _DIGEST_HEX // 2
_T = TypeVar("_T")


class CursorError(MemorydError):
    """A stored cursor cannot be decoded; the file it named will be read as new."""


def key_digest(key: str) -> str:
    """Return the short digest a record key is remembered by (12 hex characters)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


@dataclass(frozen=True)
class FileIdentity:
    """Which file a position belongs to."""

    device: int
    inode: int
    head_sha256: str
    head_length: int


@dataclass(frozen=True)
class FileCursor:
    """Everything a reader remembers about one file. See the module docstring for invariants."""

    path: str
    identity: FileIdentity
    position: int = 0
    line: int = 0  # complete lines consumed, so provenance line numbers stay right
    size: int = 0  # on-disk size when last scanned
    mtime_ns: int = 0
    at_eof: bool = False  # the last scan reached the end of the file at `size`
    in_long_line: bool = False  # the position is inside an over-long line being skipped
    not_before: datetime | None = None  # backfill cutoff for a file first seen with a source
    reread_until: int | None = None  # de-duplicate lines starting before this offset
    seen: tuple[str, ...] = ()
    seen_batches: tuple[tuple[int, datetime | None], ...] = ()
    horizon: datetime | None = None
    last_timestamp: datetime | None = None  # stands in for records that carry no time
    state: Mapping[str, Any] = field(default_factory=dict)  # per-format, JSON-serializable

    def remember(self, keys: Iterable[tuple[str, datetime | None]]) -> FileCursor:
        """Return a copy with `keys` (digest, timestamp) added to `seen`, oldest dropped first."""
        added = list(keys)
        if not added:
            return self
        stamps = [stamp for _, stamp in added if stamp is not None]
        seen = [*self.seen, *(digest for digest, _ in added)]
        batches = [*self.seen_batches, (len(added), max(stamps) if stamps else None)]
        horizon = self.horizon
        excess = len(seen) - SEEN_LIMIT
        if excess > 0:
            seen = seen[excess:]
            while excess > 0:
                count, newest = batches[0]
                if newest is not None and (horizon is None or newest > horizon):
                    horizon = newest
                if count <= excess:
                    batches.pop(0)
                else:
                    batches[0] = (count - excess, newest)
                excess -= count
        return replace(self, seen=tuple(seen), seen_batches=tuple(batches), horizon=horizon)

    def to_json(self) -> str:
        """Return the cursor as canonical JSON."""
        document = {
            "version": _FORMAT_VERSION,
            "path": self.path,
            "identity": {
                "device": self.identity.device,
                "inode": self.identity.inode,
                "head_sha256": self.identity.head_sha256,
                "head_length": self.identity.head_length,
            },
            "position": self.position,
            "line": self.line,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "at_eof": self.at_eof,
            "in_long_line": self.in_long_line,
            "not_before": _time_text(self.not_before),
            "reread_until": self.reread_until,
            "seen": _pack_digests(self.seen),
            "seen_batches": [[count, _time_text(newest)] for count, newest in self.seen_batches],
            "horizon": _time_text(self.horizon),
            "last_timestamp": _time_text(self.last_timestamp),
            "state": self.state,
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> FileCursor:
        """Given text that `to_json` produced, return the cursor. Raise CursorError otherwise."""
        try:
            return _decode(json.loads(text))
        except CursorError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise CursorError(f"not a stored cursor: {error}") from None


def _pack_digests(digests: Iterable[str]) -> str:
    """The digests' bytes, in order, as one base64 string (format version 2)."""
    packed = bytearray()
    for digest in digests:
        if len(digest) != _DIGEST_HEX:
            raise ValueError(f"not a record digest: {digest!r}")
        packed += bytes.fromhex(digest)
    return base64.b64encode(bytes(packed)).decode("ascii")


def _unpack_digests(value: object, version: int) -> tuple[str, ...]:
    if version == 1:  # a list of hex strings
        if not isinstance(value, list):
            raise CursorError(f"expected list, found {type(value).__name__}")
        return tuple(_typed(item, str) for item in value)
    try:
        packed = base64.b64decode(_typed(value, str), validate=True)
    except binascii.Error as error:
        raise CursorError(f"seen digests are not base64: {error}") from None
    if len(packed) % _DIGEST_BYTES:
        raise CursorError(f"seen digests are {len(packed)} bytes, not whole digests")
    return tuple(
        packed[start : start + _DIGEST_BYTES].hex()
        for start in range(0, len(packed), _DIGEST_BYTES)
    )


def _decode(document: Any) -> FileCursor:
    version = document.get("version")
    if version not in _READABLE_VERSIONS or isinstance(version, bool):
        raise CursorError(f"unknown cursor version {version!r}")
    identity = document["identity"]
    state = document["state"]
    if not isinstance(state, dict):
        raise CursorError("cursor state is not an object")
    return FileCursor(
        path=_typed(document["path"], str),
        identity=FileIdentity(
            device=_typed(identity["device"], int),
            inode=_typed(identity["inode"], int),
            head_sha256=_typed(identity["head_sha256"], str),
            head_length=_typed(identity["head_length"], int),
        ),
        position=_typed(document["position"], int),
        line=_typed(document["line"], int),
        size=_typed(document["size"], int),
        mtime_ns=_typed(document["mtime_ns"], int),
        at_eof=_typed(document["at_eof"], bool),
        in_long_line=_typed(document["in_long_line"], bool),
        not_before=_parse_time(document["not_before"]),
        reread_until=_optional_int(document["reread_until"]),
        seen=_unpack_digests(document["seen"], version),
        seen_batches=tuple(
            (_typed(count, int), _parse_time(newest)) for count, newest in document["seen_batches"]
        ),
        horizon=_parse_time(document["horizon"]),
        last_timestamp=_parse_time(document["last_timestamp"]),
        state=state,
    )


def _typed(value: object, kind: type[_T]) -> _T:
    # bool is an int subclass; a position must never silently come back as True.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CursorError(f"expected {kind.__name__}, found {type(value).__name__}")
    return value


def _optional_int(value: object) -> int | None:
    return None if value is None else _typed(value, int)


def _time_text(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def _parse_time(value: object) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(_typed(value, str))
    if moment.tzinfo is None:
        raise CursorError("cursor time has no time zone")
    return moment.astimezone(UTC)


# The canonical text `to_json` writes (keys sorted, no spaces) starts with the fields a file's
# identity and last scan are compared on; the size comes after the seen digests (which can be
# long), right after `seen_batches`, whose items hold no `]`. No JSON string holds `"` before
# `:` unescaped, so neither `"seen_batches":[` nor `],"size":` occurs inside the path.
_TIME = r'(?:null|"[^"\\]*")'
_CANONICAL_HEAD = re.compile(
    r'\{"at_eof":(?P<at_eof>true|false),"horizon":' + _TIME + r","
    r'"identity":\{"device":(?P<device>[0-9]+),"head_length":[0-9]+,'
    r'"head_sha256":"[0-9a-f]*","inode":(?P<inode>[0-9]+)\},'
    r'"in_long_line":(?:true|false),"last_timestamp":' + _TIME + r',"line":[0-9]+,'
    r'"mtime_ns":(?P<mtime_ns>-?[0-9]+),"not_before":' + _TIME + r',"path":"'
)
_SIZE = re.compile(r'\],"size":([0-9]+),"state":\{')


def _canonical_scan(text: str) -> tuple[bool, int, int, int, int] | None:
    """(at_eof, device, inode, size, mtime_ns) of a cursor text in canonical form, read without
    decoding it; None for a text in another form (it is then decoded)."""
    head = _CANONICAL_HEAD.match(text)
    if head is None or not text.endswith(('},"version":2}', '},"version":1}')):
        return None
    batches = text.find('"seen_batches":[', head.end())
    size = _SIZE.match(text, text.find('],"size":', batches)) if batches > 0 else None
    if size is None:
        return None
    return (
        head["at_eof"] == "true",
        int(head["device"]),
        int(head["inode"]),
        int(size[1]),
        int(head["mtime_ns"]),
    )


class StoredCursors(Mapping[str, FileCursor]):
    """A source's stored cursors (path -> the JSON text `to_json` wrote), decoded when used.

    As a mapping it is the cursors that decode, each decoded once; one that does not (written
    by a newer memoryd, or damaged) is absent, and `on_unreadable` is told once (its file is
    then read as new). `unchanged` answers `memoryd.sources._files.unchanged` from the text
    alone (`_canonical_scan`), for the reader's files that are exactly as their cursor's last
    scan left them: on a read with nothing new, no cursor is decoded (a heartbeat
    every few minutes over thousands of files, each cursor holding up to SEEN_LIMIT digests).
    A text is looked at so only in its canonical form (its start, its end and the compared
    fields); the rest of it (seen digests, times, per-format state) is checked when it is
    decoded, that is when its file changed.
    """

    def __init__(
        self,
        texts: Mapping[str, str],
        on_unreadable: Callable[[str, CursorError], None] = lambda _path, _error: None,
    ) -> None:
        self.texts = dict(texts)
        self._on_unreadable = on_unreadable
        self._decoded: dict[str, FileCursor | None] = {}

    def unchanged(self, path: str, status: os.stat_result) -> bool:
        text = self.texts.get(path)
        scan = _canonical_scan(text) if text is not None else None
        return scan is not None and scan == (
            True,
            status.st_dev,
            status.st_ino,
            status.st_size,
            status.st_mtime_ns,
        )

    def decoded(self, skip: Set[str] = frozenset()) -> dict[str, FileCursor]:
        """Every cursor that decodes, but those of `skip`, as a plain dict."""
        result = {}
        for path in self.texts:
            if path not in skip and (cursor := self._decode(path)) is not None:
                result[path] = cursor
        return result

    def _decode(self, path: str) -> FileCursor | None:
        if path not in self._decoded:
            try:
                self._decoded[path] = FileCursor.from_json(self.texts[path])
            except CursorError as error:
                self._decoded[path] = None
                self._on_unreadable(path, error)
        return self._decoded[path]

    def __getitem__(self, path: str) -> FileCursor:
        cursor = self._decode(path) if path in self.texts else None
        if cursor is None:
            raise KeyError(path)
        return cursor

    def __iter__(self) -> Iterator[str]:
        return iter(self.decoded())

    def __len__(self) -> int:
        return len(self.decoded())
