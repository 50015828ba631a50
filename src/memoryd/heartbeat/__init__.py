"""The heartbeat engine: one heartbeat's run over the extractors' steps, in its crash-safe order.

The steps themselves (chunking, context, extraction, apply, the safety gate) are the stateless
functions of `memoryd.extractors`; this package runs them over a heartbeat's chunks and keeps
the run's bookkeeping.
"""

from __future__ import annotations

from memoryd.heartbeat.dryrun import SECONDS_PER_CALL, whole_backlog
from memoryd.heartbeat.engine import Heartbeat, HeartbeatOptions, HeartbeatReport

__all__ = [
    "SECONDS_PER_CALL",
    "Heartbeat",
    "HeartbeatOptions",
    "HeartbeatReport",
    "whole_backlog",
]
