"""Consolidating the tacit file: what the safety gate holds back, and what the answer changed.

The tacit file (`MEMORY.md`) is consolidated through the same `consolidate_skills` call as the
skills files (`memoryd.rewrite.consolidate`): every earlier line is kept, merged into a named
line (its number in that line's `from`), or dropped with a reason (`dropped`). Two things are
particular to it:

- **The gate.** A merged line that says something the safety gate holds (`memoryd.store.danger`)
  and none of its earlier lines said, or that is a tacit line the review queue holds or the
  operator rejected, is not filed. A new one is held for review (`memoryd.store.review`, agent
  `REWRITE_AGENT`); in both cases the earlier lines it would have replaced stay as they are, so
  nothing is lost and a held line stays held. The rest of the answer is applied.
- **The record.** Facts are never deleted; tacit lines are not facts, but what a consolidation
  merged and dropped is still told: each merge and drop is one line of the rewrite's commit
  message (`TacitChanges.notes`), and git keeps the old lines in history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from memoryd.rewrite.consolidate import ConsolidatedTip, ConsolidatedTopic, ConsolidateSkills
from memoryd.rewrite.targets import NumberedTip, Target
from memoryd.store.danger import dangerous_reasons
from memoryd.store.provenance import sources_of
from memoryd.store.review import ReviewItem, list_items
from memoryd.store.text import clip, normalize_statement
from memoryd.worktree import FileTransaction

# Whose the lines the rewrite holds are, in the review queue.
REWRITE_AGENT: Final = "memoryd-rewrite"
_NOTE_TEXT: Final = 100


@dataclass
class TacitChanges:
    """What one tacit consolidation did, for the report and the commit message."""

    merged: int = 0  # earlier lines merged away into another line
    dropped: int = 0  # earlier lines dropped, each with a reason
    held: int = 0  # merged lines held for review instead (their earlier lines stay)
    notes: list[str] = field(default_factory=list)
    to_hold: list[ReviewItem] = field(default_factory=list)  # once the answer is applied


def settle_tacit(
    tx: FileTransaction, target: Target, answer: ConsolidateSkills, *, today: str
) -> tuple[ConsolidateSkills, TacitChanges]:
    """Given an answer for the tacit file, return the answer to apply (a line the gate holds
    replaced by its earlier lines, unchanged) and what it changes, with the new lines to hold
    for review once it is applied. Writes nothing."""
    by_number = {tip.number: tip for tip in target.tips}
    decided = {
        normalize_statement(item.text): item.status
        for item in list_items(tx)
        if item.kind == "tacit"
    }
    changes = TacitChanges()
    topics: list[ConsolidatedTopic] = []
    for topic in answer.topics:
        tips: list[ConsolidatedTip] = []
        for tip in topic.tips:
            sources = [by_number[n.strip()] for n in tip.from_ if n.strip() in by_number]
            reasons = _new_reasons(tip.text, sources)
            status = decided.get(normalize_statement(tip.text))
            unchanged = any(_same(tip.text, source.text) for source in sources)
            if unchanged or (status == "accepted" or (not reasons and status is None)):
                tips.append(tip)
                continue
            if status is None:
                changes.to_hold.append(
                    ReviewItem(
                        kind="tacit",
                        agent=REWRITE_AGENT,
                        text=tip.text,
                        reasons=tuple(sorted(reasons)),
                        held=today,
                        sources=tuple(sources_of(tx, target.path, [s.text for s in sources])),
                    )
                )
            changes.held += 1
            changes.notes.append(f'held for review, not filed: "{clip(tip.text, _NOTE_TEXT)}"')
            tips += [ConsolidatedTip(text=s.text, from_=[s.number]) for s in sources]
        topics.append(ConsolidatedTopic(topic=topic.topic, tips=tips))
    settled = ConsolidateSkills(topics=topics, dropped=answer.dropped)
    _count(settled, by_number, changes)
    return settled, changes


def _same(one: str, other: str) -> bool:
    return normalize_statement(one) == normalize_statement(other)


def _new_reasons(text: str, sources: list[NumberedTip]) -> set[str]:
    said = {reason for source in sources for reason in dangerous_reasons(source.text)}
    return set(dangerous_reasons(text)) - said


def _count(
    answer: ConsolidateSkills, by_number: dict[str, NumberedTip], into: TacitChanges
) -> None:
    for topic in answer.topics:
        for tip in topic.tips:
            gone = [
                source.text
                for n in tip.from_
                if (source := by_number.get(n.strip())) is not None
                and not _same(source.text, tip.text)
            ]
            into.merged += len(gone)
            if gone:
                quoted = "; ".join(f'"{clip(text, _NOTE_TEXT)}"' for text in gone)
                into.notes.append(f'merged into "{clip(tip.text, _NOTE_TEXT)}": {quoted}')
    for drop in answer.dropped:
        for n in drop.from_:
            source = by_number.get(n.strip())
            if source is not None:
                into.dropped += 1
                into.notes.append(
                    f'dropped "{clip(source.text, _NOTE_TEXT)}": {clip(drop.reason, _NOTE_TEXT)}'
                )
