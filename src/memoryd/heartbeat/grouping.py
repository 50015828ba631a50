"""Which short chunks of a heartbeat share one model call (`memoryd.heartbeat.sharing`).

A chunk is short when its transcript is at most a quarter of the chunk token budget. The short
chunks of one agent and routine are grouped in chronological order, whatever chunks of other
agents come between them: several agents working the same days interleave their conversations,
and grouping only neighbours would leave almost every short chat of a fleet alone with the whole
fixed prompt. A group holds at most `limit` chunks (`llm.sections_per_call`) whose transcripts
together fit one chunk's budget. A long chunk (or one without dialogue) of the same agent and
routine closes the group it would have come after: the group's later members would be asked
without what it files, and would most likely be asked again. One agent's grouping is thus the
same as when its chunks were the only ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.llm.base import estimate_tokens
from memoryd.llm.tokens import TokenEstimator

if TYPE_CHECKING:
    from memoryd.extractors.contract import RecordMemories

# A chunk this much smaller than the chunk budget is short enough to share a call.
SHORT_SHARE = 4


@dataclass(frozen=True)
class SharedAnswer:
    """A member's answer from its group's call, kept for its turn: with the stamp of the
    context it was asked with, the number of chunks the heartbeat had applied when the call
    was made, and the group's members (those the model saw in the same request)."""

    answer: RecordMemories
    asked_with: str
    applied: int
    members: frozenset[str]


def plan_groups(
    chunks: list[Chunk],
    chunk_tokens: int,
    limit: int,
    estimate: TokenEstimator = estimate_tokens,
) -> dict[str, list[Chunk]]:
    """The groups of chunks that share one call, by the key of their first chunk (only groups
    of two or more), each in chronological order. The same chunks always give the same
    groups."""
    groups: dict[str, list[Chunk]] = {}
    short = chunk_tokens // SHORT_SHARE
    # The group still open for each agent and routine, and the tokens it holds.
    open_groups: dict[tuple[str, str | None], tuple[list[Chunk], int]] = {}

    def close(owner: tuple[str, str | None]) -> None:
        members, _used = open_groups.pop(owner, ([], 0))
        if len(members) > 1:
            groups[members[0].key] = members

    for chunk in chunks:
        owner = (chunk.agent, chunk.routine)
        size = estimate(chunk.render()) if chunk.has_dialogue else chunk_tokens
        if size > short:
            close(owner)
            continue
        members, used = open_groups.get(owner, ([], 0))
        if members and len(members) < limit and used + size <= chunk_tokens:
            members.append(chunk)
            open_groups[owner] = (members, used + size)
            continue
        close(owner)
        open_groups[owner] = ([chunk], size)
    for owner in list(open_groups):
        close(owner)
    return groups


def calls_of(
    chunks: list[Chunk],
    chunk_tokens: int,
    limit: int,
    estimate: TokenEstimator = estimate_tokens,
) -> list[list[Chunk]]:
    """The model calls that would send `chunks` (chronological): each group one call, at its
    first chunk's place, every other chunk a call of its own (a dry run's estimate)."""
    groups = plan_groups(chunks, chunk_tokens, limit, estimate) if limit >= 2 else {}
    grouped = {member.key for members in groups.values() for member in members}
    return [
        groups.get(chunk.key, [chunk])
        for chunk in chunks
        if chunk.key in groups or chunk.key not in grouped
    ]
