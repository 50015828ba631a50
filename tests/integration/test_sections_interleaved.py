"""Short conversations of one agent sharing a call while another agent's conversations come
between them (`memoryd.heartbeat.grouping`), end to end: transcripts on disk -> real SDK over
HTTP -> git-backed store. A member answered before another agent's chunk was applied is checked
against the store at its turn: as given, reconciled, or asked again alone."""

from __future__ import annotations

import json
import signal
import sqlite3
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.harness import Workspace, turn
from tests.support.killing import finish, git_wrapper, run
from tests.support.marker_model import user_text
from tests.support.sections import normalized, section_model, sections_of

from memoryd.heartbeat.reconcile import Stamp
from memoryd.settings import Settings
from memoryd.state.facade import DATABASE_FILE_NAME

AGENTS = ("ops", "dev")


def two_agents(ws: Workspace, **llm: Any) -> Settings:
    agents = [
        {"name": name, "sources": [{"format": "jsonl", "path": str(ws.logs / name)}]}
        for name in AGENTS
    ]
    return ws.settings(llm=llm, agents=agents)


def chat(ws: Workspace, agent: str, name: str, when: str, said: str) -> None:
    """One short conversation of `agent` at `when` (its own session and file)."""
    later = when.replace(":00:00Z", ":01:00Z")
    ws.write_log(
        f"{agent}/{name}.jsonl",
        [
            {**turn("user", said, when), "session": f"{agent}-{name}"},
            {**turn("assistant", "Noted.", later), "session": f"{agent}-{name}"},
        ],
    )


def alternating(ws: Workspace, days: int) -> None:
    """Each day, one short chat of ops at 9:00 and one of dev at 10:00, each about a customer
    of its own."""
    for number in range(days):
        day = (date(2026, 3, 2) + timedelta(days=number)).isoformat()
        for hour, agent in ((9, "ops"), (10, "dev")):
            said = f"remember: company {agent.title()} Customer {number}: Signed deal {number}"
            chat(ws, agent, f"c{number}", f"{day}T{hour:02d}:00:00Z", said)


def facts(ws: Workspace) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(ws.store.rglob("items.json")):
        found.extend(json.loads(path.read_text(encoding="utf-8")))
    return found


def workspace(root: Path) -> Workspace:
    ws = Workspace(root)
    ws.init()
    return ws


@pytest.mark.parametrize("concurrency", [1, 4])
def test_alternating_short_chats_of_two_agents_share_one_call_per_agent(
    tmp_path: Path, concurrency: int
) -> None:
    shared, alone = workspace(tmp_path / "shared"), workspace(tmp_path / "alone")
    alternating(shared, 3)
    alternating(alone, 3)
    with FakeAnthropicServer(handler=section_model) as server:
        report = shared.heartbeat(
            two_agents(shared, sections_per_call=8, concurrency=concurrency), server.base_url
        )
        requests = list(server.message_requests)
        alone.heartbeat(two_agents(alone, sections_per_call=1), server.base_url)
        assert len(server.message_requests) == 2 + 6  # one by one: a call per chat
    assert len(requests) == 2  # one call per agent, the other agent's chats between
    for request, agent in zip(requests, AGENTS, strict=True):
        bodies = [body for _section, body in sections_of(request)]
        assert len(bodies) == 3
        assert all(f"{agent.title()} Customer" in body for body in bodies)
    assert report.outcome == "ok"
    assert report.chunks_extracted == 6
    assert report.chunks_reextracted == 0
    assert report.counters.facts_added == 6
    # Each section filed on its own day, under its own agent and conversation.
    filed = {fact["fact"] + " " + fact["source"]["agent"]: fact for fact in facts(shared)}
    for number in range(3):
        for agent in AGENTS:
            fact = filed[f"Signed deal {number} {agent}"]
            assert fact["source"]["session"] == f"{agent}-c{number}"
            assert fact["timestamp"] == (date(2026, 3, 2) + timedelta(days=number)).isoformat()
    # The same store, byte for byte, as one call per conversation.
    assert normalized(shared) == normalized(alone)
    # Every member's answer is journalled with what it was asked with, naming the members the
    # same request showed before it.
    with sqlite3.connect(shared.root / "state" / DATABASE_FILE_NAME) as db:
        rows = db.execute("SELECT asked_with FROM chunks").fetchall()
    stamps = [Stamp.from_text(text) for (text,) in rows]
    assert len(stamps) == 6 and all(stamp is not None for stamp in stamps)
    assert sorted(len(stamp.after) for stamp in stamps if stamp is not None) == [0, 0, 1, 1, 2, 2]


def acme_between(ws: Workspace, ops_said: str) -> None:
    """ops: a chat about Initech, then one about Acme; between them dev files a fact of Acme."""
    chat(ws, "ops", "c1", "2026-03-02T09:00:00Z", "remember: company Initech: Moved to Postgres")
    chat(ws, "dev", "c1", "2026-03-02T10:00:00Z", "remember: company Acme: Signed the renewal")
    chat(ws, "ops", "c2", "2026-03-03T09:00:00Z", f"remember: company Acme: {ops_said}")


def acme_facts(ws: Workspace) -> list[tuple[str, str]]:
    return sorted(
        (fact["fact"], fact["source"]["agent"])
        for fact in facts(ws)
        if fact["id"].startswith("acme-")
    )


def test_a_member_whose_entity_another_agent_filed_meanwhile_is_reconciled_unpaid(
    tmp_path: Path,
) -> None:
    shared, alone = workspace(tmp_path / "shared"), workspace(tmp_path / "alone")
    acme_between(shared, "Hired a new CTO")
    acme_between(alone, "Hired a new CTO")
    with FakeAnthropicServer(handler=section_model) as server:
        report = shared.heartbeat(two_agents(shared, sections_per_call=8), server.base_url)
        assert len(server.message_requests) == 2  # ops' two chats in one call, dev's alone
        alone.heartbeat(two_agents(alone, sections_per_call=1), server.base_url)
    # The ops answer was asked without dev's fact of Acme: a different thing, kept as given.
    assert report.chunks_reextracted == 0
    assert acme_facts(shared) == [("Hired a new CTO", "ops"), ("Signed the renewal", "dev")]
    assert normalized(shared) == normalized(alone)


def test_a_member_saying_what_another_agent_filed_meanwhile_is_asked_again_alone(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    acme_between(ws, "Signed the renewal for 2027")
    with FakeAnthropicServer(handler=section_model) as server:
        report = ws.heartbeat(two_agents(ws, sections_per_call=8), server.base_url)
        requests = server.message_requests
        # ops' call, dev's, then ops' Acme chat again, alone, shown dev's fact this time.
        assert [len(sections_of(request)) for request in requests] == [2, 1, 1]
        assert "Signed the renewal for 2027" in user_text(requests[2])
        assert "Signed the renewal" in user_text(requests[2]).split("BEGIN")[0]
    assert report.chunks_reextracted == 1
    assert report.chunks_extracted == 3
    # Filed once, from the answer asked again (this fake model files what it is told).
    assert acme_facts(ws) == [
        ("Signed the renewal", "dev"),
        ("Signed the renewal for 2027", "ops"),
    ]


def test_a_member_restating_what_another_agent_filed_meanwhile_is_not_filed_twice(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    acme_between(ws, "Signed the renewal")
    with FakeAnthropicServer(handler=section_model) as server:
        report = ws.heartbeat(two_agents(ws, sections_per_call=8), server.base_url)
        assert len(server.message_requests) == 2
    assert report.chunks_reextracted == 0
    assert acme_facts(ws) == [("Signed the renewal", "dev")]


def crash_config(ws: Workspace, base_url: str) -> Path:
    """The TOML of two agents whose short chats share calls, one call at a time."""
    llm = anthropic_llm(base_url, "concurrency = 1", "sections_per_call = 8")
    text = ops_config(llm=llm, store=ws.store, state=ws.root / "state", logs=ws.logs / "ops")
    text += f"""
[[agents]]
name = "dev"
  [[agents.sources]]
  format = "jsonl"
  path = "{ws.logs / "dev"}"
"""
    config = ws.root / "memoryd.toml"
    config.write_text(text, encoding="utf-8")
    return config


def crash_chats(ws: Workspace) -> None:
    alternating(ws, 2)
    # Then ops' Acme chats around dev's: the second is reconciled at its turn.
    chat(ws, "ops", "a1", "2026-03-05T09:00:00Z", "remember: company Initech: Moved to Postgres")
    chat(ws, "dev", "a1", "2026-03-05T10:00:00Z", "remember: company Acme: Signed the renewal")
    chat(ws, "ops", "a2", "2026-03-06T09:00:00Z", "remember: company Acme: Hired a new CTO")


@pytest.fixture
def wrapper(tmp_path: Path) -> Path:
    return git_wrapper(tmp_path / "bin")


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", ["before-add", "after-commit"])
def test_interleaved_shared_calls_killed_around_the_commit_are_not_paid_again(
    tmp_path: Path, wrapper: Path, kill_at: str
) -> None:
    with FakeAnthropicServer(handler=section_model) as server:
        reference = workspace(tmp_path / "reference")
        crash_chats(reference)
        config = crash_config(reference, server.base_url)
        assert finish(run(config, None, None, reference.root)) == 0
        paid = len(server.message_requests)
        assert paid == 2  # one call per agent
        ws = workspace(tmp_path / "crash")
        crash_chats(ws)
        config = crash_config(ws, server.base_url)
        assert finish(run(config, wrapper, kill_at, ws.root)) == -signal.SIGKILL
        assert len(server.message_requests) == 2 * paid
        assert finish(run(config, None, None, ws.root)) == 0
        # Every member's answer was journalled with its stamp: nothing is asked again.
        assert len(server.message_requests) == 2 * paid
    assert normalized(ws) == normalized(reference)
    assert ws.git("status", "--porcelain") == ""
