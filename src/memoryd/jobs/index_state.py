"""What memoryd remembers about `index.commands` between jobs: the back-off after failures.

A small JSON file in the state directory, `index-backoff.json`: `{"failures": N, "until": ISO
time}`. A cache like the state database: losing it only means the commands are tried sooner.
Light on purpose (`status` reads it without importing git).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

BACKOFF_FILE: Final = "index-backoff.json"
READS_QUEUE: Final = "queue/reads.jsonl"


def read_json(path: Path) -> dict[str, object]:
    """The JSON object in `path`, or {} when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def reading_status(state_dir: Path) -> dict[str, object]:
    """For `memoryd status`: the index commands' failures in a row and the pause, and how many
    reads by agents wait for the next heartbeat."""
    backoff = read_json(state_dir / BACKOFF_FILE)
    try:
        with (state_dir / READS_QUEUE).open("rb") as queue:
            queued = sum(1 for _ in queue)
    except OSError:
        queued = 0
    return {
        "index_failures": backoff.get("failures", 0),
        "index_paused_until": backoff.get("until"),
        "reads_queued": queued,
    }
