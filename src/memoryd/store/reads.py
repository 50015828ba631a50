"""Reads that counted as accesses: which agent read which fact on which day, per host.

docs/cli.md, Reading the memory: a fact an agent reads (`search`, `context`, `mcp`) counts as
accessed once per fact,
agent and day, and the next heartbeat applies the bump (`accessCount` + 1, `lastAccessed` moved
forward to the day of the read, docs/store-format.md, Facts) in its commit. So that a read is never
counted
twice (a second read the same day, a heartbeat killed after its commit and before it forgot the
reads it had claimed), the keys counted are recorded in the store, in the same commit as the
bumps, one file per host: `.memoryd/reads/<host>.json`, a sorted list of
`[day, agent, fact id]`. Only the last `KEEP_DAYS` days are kept: a read is always of its
reader's today, so older keys can no longer come back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import date, timedelta
from typing import Final

from memoryd.errors import CorruptFileError
from memoryd.store.facts import FactBook
from memoryd.store.hosts import host_slug
from memoryd.worktree import FileTransaction

READS_DIR: Final = ".memoryd/reads"
KEEP_DAYS: Final = 3

Key = tuple[str, str, str]  # (day, agent, fact id)


def reads_path(host: str) -> str:
    return f"{READS_DIR}/{host_slug(host)}.json"


def counted_reads(tx: FileTransaction, host: str) -> set[Key]:
    """The keys this host has counted (empty when none). Raise CorruptFileError when the file
    is not a list of `[day, agent, fact id]`."""
    path = reads_path(host)
    text = tx.read_text(path)
    if text is None:
        return set()
    try:
        return parse_reads(text)
    except ValueError as error:
        raise CorruptFileError(tx.root / path, str(error)) from None


def parse_reads(text: str) -> set[Key]:
    """The keys a reads file's text holds. Raise ValueError when it is not a list of
    `[day, agent, fact id]`."""
    try:
        document = json.loads(text)
        return {(str(day), str(agent), str(fact)) for day, agent, fact in document["counted"]}
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"unreadable counted reads ({error})") from None


def render_reads(keys: Iterable[Key]) -> str:
    """The deterministic text of a reads file holding `keys` (sorted, one a line)."""
    rows = ",\n".join("    " + json.dumps(list(key), ensure_ascii=False) for key in sorted(keys))
    return '{\n  "counted": [\n' + rows + ("\n" if rows else "") + "  ]\n}\n"


def apply_reads(
    tx: FileTransaction,
    facts: FactBook,
    host: str,
    reads: Iterable[tuple[str, str, date]],
    *,
    today: date,
) -> int:
    """Bump each fact read (fact id, agent, day) once per fact, agent and day, skipping keys
    already counted; stage the record; return how many bumps were made. Unknown ids (a fact of
    an entity that is gone, a typo through `mcp`) are counted as seen and bump nothing."""
    counted = counted_reads(tx, host)
    bumps = 0
    for fact_id, agent, day in sorted(set(reads), key=lambda read: (read[2], read[1], read[0])):
        key = (day.isoformat(), agent, fact_id)
        if key in counted:
            continue
        counted.add(key)
        bumps += facts.bump(fact_id, day) is not None
    cutoff = (today - timedelta(days=KEEP_DAYS)).isoformat()
    kept = sorted(key for key in counted if key[0] >= cutoff)
    path = reads_path(host)
    text = render_reads(kept)
    if tx.read_text(path) != text and (kept or tx.exists(path)):
        tx.write_text(path, text)
    return bumps
