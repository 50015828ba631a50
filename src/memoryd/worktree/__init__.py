"""The unit of work: how the store's files change.

`UnitOfWork` stages a job's changes, applies them atomically and commits them in one git commit
(undoing its own writes if a later step fails); `FileTransaction` is the interface the store's
modules read and change files through; the atomic-write helpers are the one place file contents
are written; `StorePaths` and `slugify` are the only way a name becomes a path inside the store;
a link, FIFO or device found in the store is set aside out of it (`set_aside_hostile`), never
followed, so that one planted entry does not stop every job.
"""

from __future__ import annotations

from memoryd.worktree._atomic import atomic_write_bytes, atomic_write_text, sweep_temporaries
from memoryd.worktree._hostile import (
    meets_hostile_entry,
    set_aside_hostile,
    set_aside_listing,
)
from memoryd.worktree._paths import MAX_SLUG_LENGTH, StorePaths, slugify
from memoryd.worktree._transaction import FileTransaction
from memoryd.worktree._unit import RUN_TRAILER, PlannedWrite, UnitOfWork, undo_own_writes

__all__ = [
    "MAX_SLUG_LENGTH",
    "RUN_TRAILER",
    "FileTransaction",
    "PlannedWrite",
    "StorePaths",
    "UnitOfWork",
    "atomic_write_bytes",
    "atomic_write_text",
    "meets_hostile_entry",
    "set_aside_hostile",
    "set_aside_listing",
    "slugify",
    "sweep_temporaries",
    "undo_own_writes",
]
