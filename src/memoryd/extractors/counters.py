"""What applying answers changed, counted over a heartbeat, and those counts in words.

Apart from `memoryd.extractors.apply` (which re-exports `ApplyCounters`) so that a heartbeat with
nothing new, whose report carries these counters at zero, does not import the applying machinery.

`describe_counts` is the one wording of a heartbeat's counters: the printed line of `memoryd
heartbeat`, the commit subject, systemd's `STATUS=` and `memoryd status` all use it, on the
counters named in `COUNTED` (the same names as the `heartbeat.finished` fields and the JSON of
`status --json`), so that they never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from memoryd.wording import plural

NOTHING_FILED = "nothing new filed"


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
    # Skill tips and tacit lines the safety gate held for review: each item once a heartbeat,
    # however many chunks proposed it (as `memoryd review` and `status` count them).
    tips_held: int = 0

    def add(self, other: ApplyCounters) -> None:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))


# The counters said in words, in this order: (counter, noun or words after the number). A noun
# takes its plural (`memoryd.wording`); the other words stay as they are.
COUNTED: tuple[tuple[str, str, bool], ...] = (
    ("facts_added", "fact", True),
    ("facts_superseded", "superseded", False),
    ("entities_created", "entity", True),
    ("entities_archived", "archived", False),
    ("entities_reactivated", "reactivated", False),
    ("skills_added", "skill", True),
    ("notes_added", "note", True),
    ("tacit_added", "tacit line", True),
    ("tips_held", "held for review", False),
    ("accesses", "access", True),
)


def counted_fields(counters: ApplyCounters) -> dict[str, int]:
    """The counters of `COUNTED`, by name (the fields of `heartbeat.finished` and the run)."""
    values = asdict(counters)
    return {name: values[name] for name, _word, _noun in COUNTED}


def describe_counts(counts: ApplyCounters | Mapping[str, object]) -> str:
    """`+7 facts, 2 superseded, 1 entity, 3 skills, 4 notes, 1 tacit line, 5 held for review`:
    the counters that are not zero, in `COUNTED`'s order; `nothing new filed` when all are.
    `counts` is the counters or a run's recorded fields (a missing or empty one counts 0)."""
    values = counted_fields(counts) if isinstance(counts, ApplyCounters) else counts
    parts = []
    for name, word, noun in COUNTED:
        raw = values.get(name)
        count = raw if isinstance(raw, int) else 0
        if count:
            text = plural(count, word) if noun else f"{count} {word}"
            parts.append(f"+{text}" if name == "facts_added" else text)
    return ", ".join(parts) or NOTHING_FILED
