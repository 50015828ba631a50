"""Over-long lines dropped unread from transcripts, kept in sight for `memoryd status`.

A line longer than the source's `max_line_bytes` is skipped unread (`memoryd.sources`): what it
said is never filed. Each heartbeat that drops one logs `source.line_dropped` (a warning) and
records it here, in the state database; `status` lists what was dropped in the last
`SHOWN_DAYS` days (older entries are forgotten at the next record). The entries are a notice to
the operator, not state the store must agree with: a rebuilt state database starts without them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memoryd.state.meta import Meta

DROPPED_KEY = "source.dropped_lines"
SHOWN_DAYS = 7


def record_dropped(meta: Meta, dropped: Sequence[tuple[str, str, str, int]], at: datetime) -> None:
    """Add this heartbeat's dropped lines (agent, source key, path, lines) and forget those
    older than `SHOWN_DAYS`; nothing is written when there is nothing to add or forget."""
    kept = recent_dropped(meta, at)
    if not dropped and len(kept) == len(meta.get_json(DROPPED_KEY) or ()):
        return
    moment = at.astimezone(UTC).isoformat()
    kept.extend(
        {"agent": agent, "source": source, "path": path, "lines": lines, "at": moment}
        for agent, source, path, lines in dropped
    )
    meta.set_json(DROPPED_KEY, kept)


def recent_dropped(meta: Meta, now: datetime) -> list[dict[str, Any]]:
    """The dropped lines recorded in the last `SHOWN_DAYS` days, oldest first."""
    since = now.astimezone(UTC) - timedelta(days=SHOWN_DAYS)
    entries = meta.get_json(DROPPED_KEY) or []
    return [entry for entry in entries if datetime.fromisoformat(entry["at"]) >= since]
