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

The read queue is written by agents, so its lines are not trusted (docs/store-format.md, Read
queue): a read's day is clamped to the day the heartbeat reads it (a read cannot be dated in the
future, which would keep a fact hot for years) and to the oldest day still recorded (so an old
date cannot be counted again and again), and a read by an agent that is not configured is
refused and counted (`reads.refused`), so invented names cannot add accesses (the built-in
reader names `cli` and `mcp`, the defaults of `search` and `mcp`, are accepted too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import date, timedelta
from typing import Final

from memoryd.errors import CorruptFileError
from memoryd.logs import get_logger
from memoryd.store.facts import FactBook
from memoryd.store.hosts import host_slug
from memoryd.worktree import FileTransaction

READS_DIR: Final = ".memoryd/reads"
KEEP_DAYS: Final = 3

Key = tuple[str, str, str]  # (day, agent, fact id)

log = get_logger(__name__)

# The readers' names when none is given (`search` reads as `cli`, `mcp` as `mcp`): a person's
# reads count too, so these are accepted beside the configured agents.
BUILT_IN_READERS: Final = frozenset({"cli", "mcp"})


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
    agents: frozenset[str] | None = None,
) -> int:
    """Bump each fact read (fact id, agent, day) once per fact, agent and day, skipping keys
    already counted; stage the record; return how many bumps were made. Unknown ids (a fact of
    an entity that is gone, a typo through `mcp`) are counted as seen and bump nothing. Days are
    clamped to [today - KEEP_DAYS, today]; given `agents`, a read by any other agent is refused
    (module docstring)."""
    counted = counted_reads(tx, host)
    cutoff_day = today - timedelta(days=KEEP_DAYS)
    refused: dict[str, int] = {}
    clamped = 0
    kept_reads: set[tuple[str, str, date]] = set()
    for fact_id, agent, day in reads:
        if agents is not None and agent not in agents and agent not in BUILT_IN_READERS:
            refused[agent] = refused.get(agent, 0) + 1
            continue
        bounded = min(max(day, cutoff_day), today)
        clamped += bounded != day
        kept_reads.add((fact_id, agent, bounded))
    if refused:
        names = sorted(refused)[:10]
        log.warning("reads.refused", reads=sum(refused.values()), agents=len(refused), names=names)
    if clamped:
        log.info("reads.clamped", reads=clamped, today=today.isoformat())
    bumps = 0
    for fact_id, agent, day in sorted(kept_reads, key=lambda read: (read[2], read[1], read[0])):
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
