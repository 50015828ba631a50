"""Which short chunks share a call (`memoryd.heartbeat.grouping`): an agent's short chats are
grouped whatever other agents' chunks come between them, within the same limits."""

from __future__ import annotations

from datetime import timedelta

from tests.support.extractors import START, UTC_ZONE, make_turn

from memoryd.extractors.chunking import Chunk
from memoryd.heartbeat.grouping import calls_of, plan_groups

BUDGET = 400  # chunk tokens: a chunk of at most 100 is short
SIZES: dict[str, int] = {}


def chunk(agent: str, number: int, size: int = 10, routine: str | None = None) -> Chunk:
    text = f"{agent} chat {number}"
    SIZES[text] = size
    turn = make_turn(text, START + timedelta(hours=number), line=number, file=f"{agent}.jsonl")
    day = (START + timedelta(hours=number)).date()
    return Chunk(agent, f"{agent}-{number}", "jsonl", routine, day, 0, (turn,), UTC_ZONE)


def size_of(rendered: str) -> int:
    return next(size for text, size in SIZES.items() if text in rendered)


def named(groups: dict[str, list[Chunk]]) -> list[list[str]]:
    return [[member.session_id for member in members] for members in groups.values()]


def test_interleaved_short_chats_of_each_agent_are_grouped_per_agent() -> None:
    chunks = [chunk(agent, number) for number in range(3) for agent in ("ops", "dev")]
    groups = plan_groups(chunks, BUDGET, 8, size_of)
    assert sorted(named(groups)) == [["dev-0", "dev-1", "dev-2"], ["ops-0", "ops-1", "ops-2"]]
    # Each group is one call, made at its first chunk's place.
    calls = calls_of(chunks, BUDGET, 8, size_of)
    assert [[c.session_id for c in call] for call in calls] == [
        ["ops-0", "ops-1", "ops-2"],
        ["dev-0", "dev-1", "dev-2"],
    ]


def test_the_limits_still_hold_across_other_agents_chunks() -> None:
    chunks = [chunk(agent, number, 90) for number in range(5) for agent in ("ops", "dev")]
    # At most `limit` sections in a call.
    assert sorted(named(plan_groups(chunks, BUDGET, 2, size_of))) == [
        ["dev-0", "dev-1"],
        ["dev-2", "dev-3"],
        ["ops-0", "ops-1"],
        ["ops-2", "ops-3"],
    ]
    # At most one chunk's budget in a call: four of 90 tokens fit 400, five do not.
    assert sorted(named(plan_groups(chunks, BUDGET, 16, size_of))) == [
        ["dev-0", "dev-1", "dev-2", "dev-3"],
        ["ops-0", "ops-1", "ops-2", "ops-3"],
    ]


def test_a_long_chunk_of_the_same_agent_closes_its_group_not_the_others() -> None:
    chunks = [
        chunk("ops", 0),
        chunk("dev", 1),
        chunk("ops", 2, 300),
        chunk("dev", 3),
        chunk("ops", 4),
    ]
    assert named(plan_groups(chunks, BUDGET, 8, size_of)) == [["dev-1", "dev-3"]]


def test_routines_are_grouped_apart() -> None:
    chunks = [
        chunk("ops", 0, routine="a"),
        chunk("ops", 1, routine="b"),
        chunk("ops", 2, routine="a"),
    ]
    assert named(plan_groups(chunks, BUDGET, 8, size_of)) == [["ops-0", "ops-2"]]
