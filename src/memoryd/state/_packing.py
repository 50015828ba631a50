"""Compressed text in the state database: the mention index's conversation-day texts.

A text is stored as one zstd frame of its UTF-8 bytes, with the content size in the frame
header. Cleaned dialogue compresses three to four times, and the texts are only ever read whole
(to append a block, or to check a name on a candidate day), so nothing is lost by packing them.

`pack_text` is also registered on every connection as the SQL function `memoryd_pack_text`
(`register_functions`), so a migration can convert a table's plain text in SQL alone.
"""

from __future__ import annotations

import sqlite3

import zstandard

# A conversation-day's text is packed fast while it may still grow (an append packs it again
# whole), and tighter once, when its day is past: on dialogue, level 15 is about 15% smaller
# than level 3, and some 30 times slower (about 5 MB/s here).
FAST = 3
TIGHT = 15
SQL_PACK_TEXT = "memoryd_pack_text"


class UnpackError(ValueError):
    """A stored value is not a packed text (damaged, or written by something else)."""


def pack_text(text: str, *, level: int = FAST) -> bytes:
    return zstandard.ZstdCompressor(level=level).compress(text.encode("utf-8"))


def unpack_text(packed: bytes) -> str:
    try:
        return zstandard.ZstdDecompressor().decompress(packed).decode("utf-8")
    except (zstandard.ZstdError, UnicodeDecodeError) as error:
        raise UnpackError(f"not a packed text: {error}") from error


def register_functions(connection: sqlite3.Connection) -> None:
    # Given a TEXT value (the migration's `text` column is STRICT TEXT NOT NULL).
    connection.create_function(SQL_PACK_TEXT, 1, pack_text, deterministic=True)
