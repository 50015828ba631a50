"""Memories agents ask to keep (`remember` over MCP), queued for the next heartbeat.

The MCP server never writes to the store. A memory to keep is appended as one agent turn of a
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

What an agent remembers is the agent's words, never the user's: each row is an `assistant` turn
carrying the agent's name, and the heartbeat reads these folders with `memoryd.jobs.remembered`,
which keeps only well-formed `remember:` and `note:` lines of the folder's own agent (a line
claiming another agent, a `skill:`, `tacit:` or `supersede:` line, an over-long one is refused
and logged), so a neighbour writing into the folder cannot make a skill, tacit knowledge or a
correction. What the heartbeat accepts is enforced here, at the door, with an error the agent can
act on: a text of at most `MAX_TEXT_CHARS`, an entity name of at most `MAX_NAME_CHARS`, at most
`MAX_PER_DAY` memories per agent and day. Files and folders are opened as the read queue's are
(no symlink, FIFO or device, `memoryd.reading.accesses`).

Each writer appends to a file it owns: `<day>.jsonl` for memoryd's own user and root, and
`<day>.u<uid>.jsonl` for any other user, so the file's owner says who wrote it. An agent with a
configured `user` has only the files that user (or root) owns filed (`memoryd.jobs.remembered`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Final

from memoryd.errors import MemorydError
from memoryd.reading.accesses import (
    open_own_for_append,
    queue_folder,
    real_folder,
    writer_file_name,
)
from memoryd.store.text import one_line, words
from memoryd.store.vocabulary import KINDS
from memoryd.worktree import slugify

REMEMBERED_DIR: Final = "remembered"
MAX_TEXT_CHARS: Final = 1000  # the longest fact or note text a heartbeat files
MAX_NAME_CHARS: Final = 200  # the longest entity name a heartbeat files
MAX_PER_DAY: Final = 100  # memories per agent and day (one day's queue is one conversation)
_LINE = re.compile(
    r"^(?:note: (?P<note>.+)|remember: (?P<kind>[a-z]+) (?P<name>[^:\n]+): (?P<fact>.+))$"
)


class InvalidMemoryError(MemorydError):
    """A memory to keep that cannot be queued as given."""


def remembered_root(state_dir: Path) -> Path:
    return state_dir / "queue" / REMEMBERED_DIR


def remember_line(text: str, *, entity: str | None, kind: str | None) -> str:
    """The turn text for a memory (module docstring). Raise InvalidMemoryError."""
    cleaned = one_line(text)
    if not words(cleaned):
        raise InvalidMemoryError("nothing to remember: the text has no words")
    if len(cleaned) > MAX_TEXT_CHARS:
        raise InvalidMemoryError(
            f"the text is {len(cleaned)} characters, at most {MAX_TEXT_CHARS} are kept: "
            "split it into shorter memories, one statement each"
        )
    if entity is None:
        return f"note: {cleaned}"
    name = one_line(entity).replace(":", " ").strip()
    if kind not in KINDS or not words(name):
        raise InvalidMemoryError(
            f"an entity needs a name and a kind, one of {', '.join(KINDS)} (got {kind!r})"
        )
    if len(name) > MAX_NAME_CHARS:
        raise InvalidMemoryError(
            f"the entity name is {len(name)} characters, at most {MAX_NAME_CHARS}: "
            "give its usual short name"
        )
    return f"remember: {kind} {name}: {cleaned}"


def accepted_line(content: object) -> bool:
    """Whether a queued turn's content is a line `remember_line` makes, within the limits."""
    if not isinstance(content, str) or "\n" in content or "\r" in content:
        return False
    match = _LINE.match(content)
    if match is None:
        return False
    if match.group("note") is not None:
        return bool(words(match.group("note"))) and len(match.group("note")) <= MAX_TEXT_CHARS
    name, fact = match.group("name").strip(), match.group("fact")
    return (
        match.group("kind") in KINDS
        and bool(words(name))
        and len(name) <= MAX_NAME_CHARS
        and len(fact) <= MAX_TEXT_CHARS
    )


def agent_folder_name(agent: str) -> str:
    """The folder of an agent's remembered queue (its slug)."""
    return slugify(agent) or "agent"


def queue_memory(
    state_dir: Path, *, agent: str, text: str, entity: str | None, kind: str | None, at: datetime
) -> Path:
    """Append the memory to the agent's queue for the day of `at`; return the file. Raise
    InvalidMemoryError (the text, the name, a full day) or OSError (an unsafe queue)."""
    line = remember_line(text, entity=entity, kind=kind)
    queue_folder(state_dir)
    folder = remembered_root(state_dir) / agent_folder_name(agent)
    for level in (folder.parent, folder):
        if not os.path.lexists(level):
            level.mkdir(exist_ok=True)
            os.chmod(level, 0o2770)  # noqa: S103 - group members queue memories (docstring)
        real_folder(level)
    path = folder / writer_file_name(state_dir, at.date().isoformat())
    row = {
        "agent": agent,
        "role": "assistant",
        "content": line,
        "timestamp": at.isoformat(),
        "session_id": f"remember-{at.date().isoformat()}",
    }
    data = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8")
    fd = open_own_for_append(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # two remembers at once count the day one after the other
        if _lines(fd) >= MAX_PER_DAY:
            raise InvalidMemoryError(
                f"{MAX_PER_DAY} memories are queued for {at.date().isoformat()} already, the most "
                "a day holds: keep only what matters most, or remember it tomorrow"
            )
        os.write(fd, data)  # one append of one complete line: readers never see half of it
    finally:
        os.close(fd)
    return path


def _lines(fd: int) -> int:
    """How many lines the open queue file holds (read from its start, without moving writes)."""
    count, offset = 0, 0
    while block := os.pread(fd, 1 << 16, offset):
        count += block.count(b"\n")
        offset += len(block)
    return count
