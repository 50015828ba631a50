"""Helpers for the extractor tests: chunks built from turns, a real git store, the state database.

Everything is real: `make_store` runs the code of `memoryd init` in a temporary folder, sessions
stage their writes in a real `UnitOfWork`, and the state database is a SQLite file. Times are
fixed aware UTC instants; nothing reads the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from memoryd.extractors.apply import StoreSession
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.contract import RecordMemories
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.sources.model import Provenance, Role, Turn
from memoryd.store.layout import init_store
from memoryd.worktree import UnitOfWork

UTC_ZONE = ZoneInfo("UTC")
START = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
TODAY = date(2026, 3, 10)  # the processing date (recordedAt)
LOG_FILE = "/logs/ops/s1.jsonl"
SKILLS_DIR = "agents"
TACIT_FILE = "MEMORY.md"


def make_turn(
    text: str,
    when: datetime,
    *,
    role: Role = "user",
    line: int = 1,
    file: str = LOG_FILE,
) -> Turn:
    return Turn(
        role=role,
        text=text,
        timestamp=when,
        provenance=Provenance(file=file, lines=(line, line)),
        trusted=role != "tool",
    )


def make_chunk(
    *texts: str,
    when: datetime = START,
    agent: str = "ops",
    session: str = "s1",
    routine: str | None = None,
    zone: ZoneInfo = UTC_ZONE,
    first_line: int = 1,
    file: str = LOG_FILE,
) -> Chunk:
    """A chunk of user turns one minute apart, starting at `when`, on its local day in `zone`."""
    turns = tuple(
        make_turn(text, when + timedelta(minutes=n), line=first_line + n, file=file)
        for n, text in enumerate(texts or ("hello",))
    )
    return Chunk(
        agent=agent,
        session_id=session,
        source_format="jsonl",
        routine=routine,
        day=when.astimezone(zone).date(),
        part=0,
        turns=turns,
        zone=zone,
    )


def make_store(root: Path) -> GitStore:
    """A fresh store skeleton at `root`, committed, as `memoryd init` makes it."""
    init_store(root, TACIT_FILE, SKILLS_DIR, "memoryd", "memoryd@localhost")
    return GitStore(root, GitIdentity("memoryd", "memoryd@localhost"), None)


def open_session(uow: UnitOfWork, today: date = TODAY) -> StoreSession:
    return StoreSession.open(uow, skills_dir=SKILLS_DIR, tacit_file=TACIT_FILE, today=today)


def answer(**fields: Any) -> RecordMemories:
    """A `record_memories` answer, validated as the model's would be."""
    return RecordMemories.model_validate(fields)


def person(name: str, **flags: Any) -> dict[str, Any]:
    return {"name": name, "kind": "person", **flags}


def fact(
    name: str,
    text: str,
    *,
    kind: str = "person",
    category: str = "context",
    **extra: Any,
) -> dict[str, Any]:
    return {"entity": {"name": name, "kind": kind}, "fact": text, "category": category, **extra}


def store_files(root: Path) -> Mapping[str, bytes]:
    """Every file of the store on disk (outside .git), with its bytes."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }
