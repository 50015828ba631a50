"""Memories agents ask to keep (`remember` over MCP), queued for the next heartbeat.

The MCP server never writes to the store. A memory to keep is appended as one user turn of a
JSONL transcript — `<state dir>/queue/remembered/<agent>/<YYYY-MM-DD>.jsonl`, the generic `jsonl`
format — which the heartbeat reads as one more source of that agent (`memoryd.jobs.sources`),
so it goes through the normal pipeline: cleaning and redaction, extraction (the model, or the
markers provider), entity heuristics, dedup, the lock and one commit, with cursors in the store.
With an entity given, the turn is a marker line (`remember: <kind> <Name>: <text>`), which both
the model and the markers provider file as a fact of that entity; without one it is a `note:`
line, a timeline entry for the markers provider and plain text for the model to judge.

Like the read queue, these files hold what is not filed yet (docs/store-format.md, The store is the
truth): they are inputs, as a
transcript is, and the cursor of each lives in the store once a heartbeat has read it. They are
group-writable like the read queue (`memoryd.reading.accesses`), so agents of memoryd's group can
queue memories.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Final

from memoryd.errors import MemorydError
from memoryd.reading.accesses import open_for_append, queue_folder
from memoryd.store.text import one_line, words
from memoryd.store.vocabulary import KINDS
from memoryd.worktree import slugify

REMEMBERED_DIR: Final = "remembered"
MAX_TEXT_CHARS: Final = 2000


class InvalidMemoryError(MemorydError):
    """A memory to keep that cannot be queued as given."""


def remembered_root(state_dir: Path) -> Path:
    return state_dir / "queue" / REMEMBERED_DIR


def remember_line(text: str, *, entity: str | None, kind: str | None) -> str:
    """The turn text for a memory (module docstring). Raise InvalidMemoryError."""
    cleaned = one_line(text)[:MAX_TEXT_CHARS]
    if not words(cleaned):
        raise InvalidMemoryError("nothing to remember: the text has no words")
    if entity is None:
        return f"note: {cleaned}"
    name = one_line(entity).replace(":", " ").strip()
    if kind not in KINDS or not words(name):
        raise InvalidMemoryError(
            f"an entity needs a name and a kind, one of {', '.join(KINDS)} (got {kind!r})"
        )
    return f"remember: {kind} {name}: {cleaned}"


def queue_memory(
    state_dir: Path, *, agent: str, text: str, entity: str | None, kind: str | None, at: datetime
) -> Path:
    """Append the memory to the agent's queue for the day of `at`; return the file."""
    line = remember_line(text, entity=entity, kind=kind)
    queue_folder(state_dir)
    folder = remembered_root(state_dir) / (slugify(agent) or "agent")
    for level in (folder.parent, folder):
        if not level.is_dir():
            level.mkdir(exist_ok=True)
            os.chmod(level, 0o2770)  # noqa: S103 - group members queue memories (docstring)
    path = folder / f"{at.date().isoformat()}.jsonl"
    row = {
        "role": "user",
        "content": line,
        "timestamp": at.isoformat(),
        "session_id": f"remember-{at.date().isoformat()}",
    }
    data = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8")
    fd = open_for_append(path)
    try:
        os.write(fd, data)  # one append of one complete line: readers never see half of it
    finally:
        os.close(fd)
    return path
