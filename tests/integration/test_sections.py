"""Short conversations of one agent and day sharing one call (`llm.sections_per_call`), end to
end: transcripts on disk -> real SDK over HTTP -> git-backed store, per-section provenance."""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import Error, FakeAnthropicServer, RecordedRequest
from tests.support.harness import Workspace, turn
from tests.support.marker_model import user_text
from tests.support.sections import normalized, section_model, sections_of

from memoryd.budget import PROMPT_TOKENS_ALLOWANCE
from memoryd.heartbeat import HeartbeatReport
from memoryd.jobs.environment import open_state
from memoryd.jobs.heartbeat import build_heartbeat, dry_run_heartbeat
from memoryd.jobs.reconcile import reconcile_state
from memoryd.llm.tokens import estimate_tokens_for


def write_short(ws: Workspace, count: int, first: str = "2026-03-02", *, days: int = 1) -> None:
    """`count` short conversations, the n-th on day `n % days` after `first`."""
    for number in range(count):
        day = (date.fromisoformat(first) + timedelta(days=number % days)).isoformat()
        said = f"remember: company Customer {number}: Signed deal {number}"
        when = f"{day}T{9 + number:02d}:00:00Z"
        later = f"{day}T{9 + number:02d}:01:00Z"
        ws.write_log(
            f"short-{number}.jsonl",
            [
                {
                    **turn("user", said, when),
                    "session": f"conv-{number}",
                },
                {**turn("assistant", "Noted.", later), "session": f"conv-{number}"},
            ],
        )


def sources_by_entity(ws: Workspace) -> dict[str, tuple[str, str]]:
    found = {}
    for path in ws.store.rglob("items.json"):
        for fact in json.loads(path.read_text(encoding="utf-8")):
            found[fact["fact"]] = (fact["source"]["session"], Path(fact["source"]["file"]).name)
    return found


@pytest.mark.parametrize("concurrency", [1, 4])
def test_short_conversations_of_a_day_share_one_call_and_file_as_if_asked_alone(
    tmp_path: Path, concurrency: int
) -> None:
    shared = Workspace(tmp_path / "shared")
    shared.init()
    write_short(shared, 3)
    alone = Workspace(tmp_path / "alone")
    alone.init()
    write_short(alone, 3)
    with FakeAnthropicServer(handler=section_model) as server:
        report = shared.heartbeat(
            shared.settings(llm={"sections_per_call": 8, "concurrency": concurrency}),
            server.base_url,
        )
        requests = server.message_requests
        assert len(requests) == 1
        assert [section for section, _ in sections_of(requests[0])] == ["s1", "s2", "s3"]
        alone.heartbeat(alone.settings(llm={"sections_per_call": 1}), server.base_url)
        assert len(server.message_requests) == 4
    assert report.outcome == "ok"
    assert report.chunks_extracted == 3
    assert report.counters.facts_added == 3
    # Each fact keeps its own conversation's provenance.
    assert sources_by_entity(shared) == {
        f"Signed deal {n}": (f"conv-{n}", f"short-{n}.jsonl") for n in range(3)
    }
    # The same store, byte for byte, as one call per conversation.
    assert normalized(shared) == normalized(alone)


def test_short_conversations_of_several_days_share_one_call_each_filed_on_its_day(
    tmp_path: Path,
) -> None:
    shared = Workspace(tmp_path / "shared")
    shared.init()
    write_short(shared, 4, days=3)  # days 2, 3, 4, then 2 again: sorted by time, 0 3 1 2
    alone = Workspace(tmp_path / "alone")
    alone.init()
    write_short(alone, 4, days=3)
    with FakeAnthropicServer(handler=section_model) as server:
        report = shared.heartbeat(shared.settings(llm={"sections_per_call": 8}), server.base_url)
        requests = server.message_requests
        assert len(requests) == 1
        text = user_text(requests[0])
        alone.heartbeat(alone.settings(llm={"sections_per_call": 1}), server.base_url)
        assert len(server.message_requests) == 5
    # Each section carries its own date; the request names no date of its own.
    headers = re.findall(r"^(s\d+): conversation (conv-\d+) of (\S+);", text, re.MULTILINE)
    assert headers == [
        ("s1", "conv-0", "2026-03-02"),
        ("s2", "conv-3", "2026-03-02"),
        ("s3", "conv-1", "2026-03-03"),
        ("s4", "conv-2", "2026-03-04"),
    ]
    assert "Date of the conversation" not in text
    assert (report.outcome, report.chunks_extracted, report.counters.facts_added) == ("ok", 4, 4)
    # Each day's note holds that day's conversations, and each fact its conversation's date.
    notes = {path: text for path, text in shared.memories().items() if re.match(r"memory/\d", path)}
    assert sorted(notes) == [f"memory/2026-03-0{day}.md" for day in (2, 3, 4)]
    assert "Talked about Customer 0" in notes["memory/2026-03-02.md"]
    assert "Talked about Customer 3" in notes["memory/2026-03-02.md"]
    assert "Talked about Customer 1" in notes["memory/2026-03-03.md"]
    assert "Talked about Customer 2" in notes["memory/2026-03-04.md"]
    assert "Customer 1" not in notes["memory/2026-03-02.md"] + notes["memory/2026-03-04.md"]
    dated = {
        fact["fact"]: fact["timestamp"]
        for path in shared.store.rglob("items.json")
        for fact in json.loads(path.read_text(encoding="utf-8"))
    }
    assert dated == {
        "Signed deal 0": "2026-03-02",
        "Signed deal 1": "2026-03-03",
        "Signed deal 2": "2026-03-04",
        "Signed deal 3": "2026-03-02",
    }
    # The same store, byte for byte, as one call per conversation.
    assert normalized(shared) == normalized(alone)


def test_an_answer_without_sections_falls_back_to_one_call_per_conversation(
    ws_root: Workspace,
) -> None:
    write_short(ws_root, 2)
    with FakeAnthropicServer(handler=lambda r: section_model(r, attribute=False)) as server:
        report = ws_root.heartbeat(ws_root.settings(llm={"sections_per_call": 8}), server.base_url)
        requests = server.message_requests
    # The shared call and its corrective retry, then each conversation alone.
    assert len(requests) == 4
    assert "section: required, one of s1, s2" in user_text(requests[1])
    assert report.outcome == "ok"
    assert report.chunks_failed == 0
    assert report.counters.facts_added == 2
    assert sources_by_entity(ws_root)["Signed deal 1"] == ("conv-1", "short-1.jsonl")


def test_a_shared_call_that_fell_back_is_not_paid_for_again_by_the_next_heartbeat(
    ws_root: Workspace,
) -> None:
    # A per-heartbeat share that the unusable shared call (and its corrective retry) uses up:
    # the next heartbeats ask the conversations one by one instead of the same shared call.
    write_short(ws_root, 2)
    settings = ws_root.settings(
        llm={
            "sections_per_call": 8,
            "concurrency": 1,
            "prices": {"claude-haiku-5-5": {"input": 1.0, "output": 5.0}},
        },
        budget={"daily_usd": 0, "heartbeat_usd": 0.001},
    )
    with FakeAnthropicServer(handler=lambda r: section_model(r, attribute=False)) as server:
        first = ws_root.heartbeat(settings, server.base_url)
        assert (first.outcome, first.stop_reason, first.counters.facts_added) == (
            "stopped",
            "budget",
            0,
        )
        assert len(server.message_requests) == 2  # the shared call and its retry
        second = ws_root.heartbeat(settings, server.base_url)
        third = ws_root.heartbeat(settings, server.base_url)
        requests = server.message_requests[2:]
    assert [len(sections_of(r)) for r in requests] == [1, 1]
    assert all(section is None for r in requests for section, _ in sections_of(r))
    assert (second.counters.facts_added, third.counters.facts_added) == (1, 1)
    assert not third.more_waiting


def heartbeat_stopping_after(ws: Workspace, base_url: str, calls: int) -> HeartbeatReport:
    """One heartbeat that is asked to stop once `calls` requests were answered."""
    settings = ws.settings(llm={"sections_per_call": 8})
    env = ws.environment()
    with (
        open_state(settings, env, discard_corrupt=True) as state,
        ws.extractor(settings, base_url) as extractor,
    ):
        heartbeat = build_heartbeat(settings, env, state, extractor)
        reconcile_state(state, heartbeat.git, heartbeat.settings.host, env.clock())
        heartbeat.should_stop = lambda: heartbeat.report.chunks_extracted >= calls
        return heartbeat.run()


@pytest.mark.parametrize("days", [1, 3])
def test_a_heartbeat_stopped_after_the_shared_call_files_the_rest_next_time_unpaid(
    tmp_path: Path, days: int
) -> None:
    stopped = Workspace(tmp_path / "stopped")
    stopped.init()
    write_short(stopped, 3, days=days)
    whole = Workspace(tmp_path / "whole")
    whole.init()
    write_short(whole, 3, days=days)
    with FakeAnthropicServer(handler=section_model) as server:
        first = heartbeat_stopping_after(stopped, server.base_url, 1)
        assert len(server.message_requests) == 1
        assert first.counters.facts_added == 1  # the first conversation only
        assert first.chunks_deferred == 2
        second = stopped.heartbeat(stopped.settings(llm={"sections_per_call": 8}), server.base_url)
        assert len(server.message_requests) == 1  # the journalled answers: nothing paid twice
        assert second.chunks_reused == 2
        assert second.counters.facts_added == 2
        stopped.heartbeat(stopped.settings(llm={"sections_per_call": 8}), server.base_url)
        assert len(server.message_requests) == 1
        whole.heartbeat(whole.settings(llm={"sections_per_call": 8}), server.base_url)
    assert normalized(stopped) == normalized(whole)  # nothing filed twice, nothing lost


@pytest.fixture
def ws_root(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def test_a_shared_call_the_api_keeps_failing_stops_the_heartbeat_and_files_nothing(
    ws_root: Workspace,
) -> None:
    write_short(ws_root, 3)
    settings = ws_root.settings(llm={"sections_per_call": 8})
    with FakeAnthropicServer(handler=section_model) as server:
        server.fail_next(*[Error(529, "overloaded_error")] * 3)  # every attempt of the call
        first = ws_root.heartbeat(settings, server.base_url)
        assert first.outcome == "stopped"
        assert first.counters.facts_added == 0 and first.chunks_failed == 0
        second = ws_root.heartbeat(settings, server.base_url)
        assert len(server.message_requests) == 4  # three failed attempts, then one shared call
    assert second.chunks_extracted == 3
    assert second.counters.facts_added == 3


def test_a_dry_run_counts_the_calls_a_heartbeat_makes_when_conversations_share(
    ws_root: Workspace,
) -> None:
    write_short(ws_root, 3)
    ws_root.write_log(
        "other-day.jsonl",
        [turn("user", "remember: company Initech: Renewed", "2026-03-03T09:00:00Z")],
    )
    settings = ws_root.settings(llm={"sections_per_call": 3})
    alone = dry_run_heartbeat(ws_root.settings(llm={"sections_per_call": 1}), ws_root.environment())
    dry = dry_run_heartbeat(settings, ws_root.environment())
    assert (dry["chunks_to_send"], dry["estimated_calls"]) == (4, 2)  # 3 a call at most
    assert (alone["chunks_to_send"], alone["estimated_calls"]) == (4, 4)
    # The fixed allowance is counted once per call, not once per conversation.
    assert isinstance(dry["estimated_input_tokens"], int)
    assert isinstance(alone["estimated_input_tokens"], int)
    assert alone["estimated_input_tokens"] - dry["estimated_input_tokens"] == (
        2 * PROMPT_TOKENS_ALLOWANCE
    )
    with FakeAnthropicServer(handler=section_model) as server:
        ws_root.heartbeat(settings, server.base_url)
        assert len(server.message_requests) == dry["estimated_calls"]
    markers = dry_run_heartbeat(ws_root.settings("markers"), ws_root.environment())
    assert (markers["chunks_to_send"], markers["estimated_calls"]) == (0, 0)


@pytest.mark.parametrize(
    ("llm", "sizes"),
    [
        ({"sections_per_call": 3}, [3, 3, 1]),
        # About 110 tokens a conversation: four fit in a budget of 500, a fifth would not.
        ({"sections_per_call": 8, "chunk_tokens": 500}, [4, 3]),
    ],
)
def test_conversations_of_several_days_share_calls_within_both_limits(
    ws_root: Workspace, llm: dict[str, int], sizes: list[int]
) -> None:
    write_short(ws_root, 7, days=4)
    for number in range(7):  # a longer answer in each conversation
        path = ws_root.logs / f"short-{number}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        rows[1]["content"] = "Noted, the deal terms were read out in full. " * 6
        ws_root.write_log(path.name, rows)
    settings = ws_root.settings(llm=llm)
    with FakeAnthropicServer(handler=section_model) as server:
        report = ws_root.heartbeat(settings, server.base_url)
        requests = server.message_requests
    # (A conversation alone may be sent ahead of a group's call: compare sizes sorted.)
    assert sorted(len(sections_of(request)) for request in requests) == sorted(sizes)
    for request in requests:
        tokens = sum(
            estimate_tokens_for(settings.llm.model, body) for _section, body in sections_of(request)
        )
        assert tokens <= settings.llm.chunk_tokens
    assert report.counters.facts_added == 7


def marked_for_cache(request: RecordedRequest) -> bool:
    return any("cache_control" in tool for tool in request.body.get("tools", []))


def test_a_heartbeats_only_call_does_not_pay_for_a_cache_write(ws_root: Workspace) -> None:
    # One shared call is all the heartbeat sends: a cache write (1.25x) would never be read.
    write_short(ws_root, 3, days=3)
    with FakeAnthropicServer(handler=section_model) as server:
        ws_root.heartbeat(ws_root.settings(llm={"sections_per_call": 8}), server.base_url)
        lone = server.message_requests
    assert len(lone) == 1 and not marked_for_cache(lone[0])


def test_a_shared_call_followed_by_another_marks_the_prefix_for_the_cache(
    ws_root: Workspace,
) -> None:
    write_short(ws_root, 4, days=2)
    with FakeAnthropicServer(handler=section_model) as server:
        ws_root.heartbeat(
            ws_root.settings(llm={"sections_per_call": 2, "concurrency": 1}), server.base_url
        )
        requests = server.message_requests
    assert [len(sections_of(request)) for request in requests] == [2, 2]
    assert all(marked_for_cache(request) for request in requests)
