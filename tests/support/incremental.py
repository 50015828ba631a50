"""Builders for the incremental-read tests: a JSONL transcript file and timestamps from a fixed
base."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def stamp(index: int) -> str:
    return (BASE + timedelta(seconds=index)).isoformat().replace("+00:00", "Z")


def jsonl_file(count: int) -> str:
    return "".join(
        json.dumps(
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"text {i}",
                "timestamp": stamp(i),
            }
        )
        + "\n"
        for i in range(count)
    )
