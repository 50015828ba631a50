"""The reprocess requests `memoryd status` shows (`memoryd reprocess`), read straight from the
store's files, as `status` reads the review queue: no transaction, no git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryd.store.reprocess import REPROCESS_DIR, parse_request


def reprocess_status(store_root: Path) -> list[dict[str, Any]]:
    """The requests not done yet, oldest first; a file that does not parse is listed as
    `unreadable` (someone has to look at it)."""
    found: list[dict[str, Any]] = []
    for path in sorted((store_root / REPROCESS_DIR).glob("*.json")):
        try:
            request = parse_request(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError) as error:
            found.append({"id": path.stem, "state": "unreadable", "error": str(error)[:200]})
            continue
        if request.active:
            found.append(request.to_json())
    return sorted(found, key=lambda item: (str(item.get("requested")), str(item["id"])))


def reprocess_lines(requests: list[dict[str, Any]]) -> list[str]:
    """The text status's lines about them (none when there is no request in progress)."""
    lines = []
    for item in requests:
        if item["state"] == "unreadable":
            lines.append(f"reprocess {item['id']}: UNREADABLE ({item['error']})")
            continue
        what = item["agent"] or "every agent"
        if item["source"]:
            what += f", source {item['source']}"
        if item["since"] or item["until"]:
            what += f", days {item['since'] or 'start'}..{item['until'] or 'now'}"
        state = "pending" if item["state"] == "pending" else "running"
        if item["resume_from"]:
            state += f", filed up to {item['resume_from']}"
        lines.append(f"reprocess {item['id']} ({what}) on {item['host']}: {state}")
    return lines
