"""Sharing the store between hosts through a git remote (config `git.push`).

Pull before writing, push after; a remote that moved on is merged by meaning (`_merge*`: each
of memoryd's file formats merged as the heartbeat would have written it) into a commit built
without git's text merge (`_merge_tree`), so no host ever sees a conflict. The face is what the
jobs need: `recover`, `pull`, `push`, `push_with_retries`, the sync's health and its trailer.
"""

from __future__ import annotations

from memoryd.sync._remote import (
    PullResult,
    PushResult,
    SyncHealth,
    pull,
    push,
    push_with_retries,
    read_health,
    record_push,
    recover,
)
from memoryd.sync._trailer import SYNC_TRAILER

__all__ = [
    "SYNC_TRAILER",
    "PullResult",
    "PushResult",
    "SyncHealth",
    "pull",
    "push",
    "push_with_retries",
    "read_health",
    "record_push",
    "recover",
]
