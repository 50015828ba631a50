"""The SQLite state database: cursors, the full-text index of conversation-days, pending facts,
the chunk journal, failures and quarantine, the usage ledger, run history, rewrite tracking.

Open it with `State.open(state_dir / DATABASE_FILE_NAME)`. Everything stored is derived from
what callers pass in: this package reads no clock and no environment.
"""

from memoryd.state.cursors import CursorRecord, Cursors
from memoryd.state.db import StateDB
from memoryd.state.errors import (
    JournalStateError,
    StateBusyError,
    StateCorruptError,
    StateError,
    StateValueError,
    StateVersionError,
)
from memoryd.state.facade import DATABASE_FILE_NAME, State
from memoryd.state.failures import DEFAULT_QUARANTINE_THRESHOLD, FailureRecord, Failures
from memoryd.state.journal import ChunkRecord, ChunkState, Journal
from memoryd.state.mentions import ConversationDay, MentionIndex
from memoryd.state.meta import Meta
from memoryd.state.pending import PendingEntity, PendingRow, PendingTable
from memoryd.state.rewrites import EntityRewrite, PendingBatch, RewriteTracking
from memoryd.state.runs import RunRecord, Runs
from memoryd.state.usage import UsageLedger, UsageTotals

__all__ = [
    "DATABASE_FILE_NAME",
    "DEFAULT_QUARANTINE_THRESHOLD",
    "ChunkRecord",
    "ChunkState",
    "ConversationDay",
    "CursorRecord",
    "Cursors",
    "EntityRewrite",
    "FailureRecord",
    "Failures",
    "Journal",
    "JournalStateError",
    "MentionIndex",
    "Meta",
    "PendingBatch",
    "PendingEntity",
    "PendingRow",
    "PendingTable",
    "RewriteTracking",
    "RunRecord",
    "Runs",
    "State",
    "StateBusyError",
    "StateCorruptError",
    "StateDB",
    "StateError",
    "StateValueError",
    "StateVersionError",
    "UsageLedger",
    "UsageTotals",
]
