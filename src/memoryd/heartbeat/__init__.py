"""The heartbeat engine: one heartbeat's run over the extractors' steps, in its crash-safe order.

The steps themselves (chunking, context, extraction, apply, the safety gate) are the stateless
functions of `memoryd.extractors`; this package runs them over a heartbeat's chunks and keeps
the run's bookkeeping.
"""

from __future__ import annotations

from memoryd.heartbeat.engine import Heartbeat, HeartbeatOptions, HeartbeatReport

__all__ = [
    "Heartbeat",
    "HeartbeatOptions",
    "HeartbeatReport",
]
