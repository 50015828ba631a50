"""Finishing what a killed job left half-done, before any job writes: one place, one order.

Both jobs record a commit intent before they write files (`memoryd.extractors.recovery` for the
heartbeat, `memoryd.rewrite.recovery` for the rewrite). Whichever job runs next finishes or undoes
both — the heartbeat's first, then the rewrite's — before it commits edits others left in the
store, so neither job ever commits the other's half-done writes as someone else's edits.
"""

from __future__ import annotations

from datetime import datetime

from memoryd.extractors.recovery import finish_interrupted_heartbeat
from memoryd.gitrepo import GitStore
from memoryd.rewrite.recovery import finish_interrupted_rewrite
from memoryd.state.facade import State


def finish_interrupted_jobs(state: State, git: GitStore, at: datetime) -> None:
    """Finish (commit found) or undo (not found) a killed heartbeat's, then rewrite's, commit."""
    finish_interrupted_heartbeat(state, git, at)
    finish_interrupted_rewrite(state, git, at)
