"""What applying answers changed, counted over a heartbeat (for the commit message and the log).

Apart from `memoryd.extractors.apply` (which re-exports it) so that a heartbeat with nothing new,
whose report carries these counters at zero, does not import the applying machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class ApplyCounters:
    """What applying changed; summed over a heartbeat for the commit message and the log."""

    facts_added: int = 0
    facts_superseded: int = 0
    entities_created: int = 0
    entities_archived: int = 0
    entities_reactivated: int = 0
    skills_added: int = 0
    notes_added: int = 0
    tacit_added: int = 0
    accesses: int = 0
    pending_added: int = 0
    pending_filed: int = 0
    ignored_references: int = 0
    items_skipped: int = 0
    tips_held: int = 0  # skill tips and tacit lines the safety gate held for review

    def add(self, other: ApplyCounters) -> None:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))
