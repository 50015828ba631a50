"""Model calls in flight at once (`llm.concurrency`): the store comes out exactly as one call at
a time leaves it, answers given for a context that changed meanwhile are reconciled or, when they
would be wrong, asked again, and the
API's rate-limit headers slow memoryd down instead of failing it."""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.fake_anthropic import Error, FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn
from tests.support.marker_model import transcript_of, user_text

from memoryd.errors import EXIT_OK
from memoryd.state import State

_REMEMBER = re.compile(r"^remember: (\w+) ([^:]+): (.+)$", re.MULTILINE)


class ContextModel:
    """Files `remember:` lines; a fact about an entity the request lists as known is marked
    "(seen N)", N the number of its facts shown, so an answer depends on the context sent.
    Answers come after `delay` seconds, so that calls overlap; the most in flight is kept."""

    def __init__(self, delay: float = 0.05, *, overlap: bool = False, wait: float = 4) -> None:
        self.delay = delay
        self.overlap = overlap
        self.wait = wait  # how long the second call waits for a third (well under the timeout)
        self.lock = threading.Condition()
        self.current = 0
        self.most = 0
        self.calls = 0

    def __call__(self, request: RecordedRequest) -> ToolUse:
        with self.lock:
            self.current += 1
            self.calls += 1
            self.most = max(self.most, self.current)
            self.lock.notify_all()
            if self.overlap and self.calls == 2:
                # The first call goes alone (it proves the model works); the second waits (a
                # while at most) for a third to arrive meanwhile.
                self.lock.wait_for(lambda: self.calls > 2, timeout=self.wait)
        text = user_text(request)
        before_transcript = text.split("<<<MEMORYD-", 1)[0]
        facts = []
        entities = []
        for kind, name, said in _REMEMBER.findall(transcript_of(request)):
            block = re.search(
                rf"^\S+: {re.escape(name)}, .*?(?=^\S+: |\Z)",
                before_transcript,
                re.MULTILINE | re.DOTALL,
            )
            fact = said
            if block:
                shown = len(re.findall(r"^  \S+", block.group(0), re.MULTILINE))
                fact = f"{said} (seen {shown})"
            facts.append(
                {"entity": {"name": name, "kind": kind}, "fact": fact, "category": "status"}
            )
            entities.append({"name": name, "kind": kind, "significant": True})
        with self.lock:
            self.current -= 1
        return ToolUse({"facts": facts, "entities": entities}, delay_seconds=self.delay)


def _rows() -> list[dict[str, Any]]:
    rows = []
    for day in range(1, 9):
        lines = [f"remember: company Customer {day}: Signed in March"]
        if day in (3, 4):
            lines.append(f"remember: person Jane Doe: Met on day {day}")
        rows.append(turn("user", "\n".join(lines), f"2026-03-0{day}T10:00:00Z"))
    return rows


def _normalized(ws: Workspace) -> dict[str, str]:
    return {path: text.replace(str(ws.root), "WS") for path, text in ws.memories().items()}


@pytest.mark.parametrize("concurrency", [2, 4, 8])
def test_calls_in_flight_give_the_store_one_call_at_a_time_gives(
    tmp_path: Path, concurrency: int
) -> None:
    rows = _rows()
    ahead = Workspace(tmp_path / "ahead")
    ahead.init()
    ahead.write_log("a.jsonl", rows)
    one = Workspace(tmp_path / "one")
    one.init()
    one.write_log("a.jsonl", rows)
    model = ContextModel(overlap=True)
    with FakeAnthropicServer(handler=model) as server:
        report = ahead.heartbeat(ahead.settings(llm={"concurrency": concurrency}), server.base_url)
        sent_ahead = len(server.message_requests)
        assert model.most > 1  # calls really were in flight together
        model.delay = 0
        reference = one.heartbeat(one.settings(llm={"concurrency": 1}), server.base_url)
    assert report.exit_code == EXIT_OK and reference.exit_code == EXIT_OK
    assert _normalized(ahead) == _normalized(one)
    facts = [fact["fact"] for fact in one.facts("life/areas/people/jane-doe")]
    assert facts == ["Met on day 3", "Met on day 4 (seen 1)"]  # the context mattered
    # Jane Doe's second chunk was sent before her first was filed: it was asked again.
    assert report.chunks_reextracted >= 1
    assert sent_ahead == report.chunks_extracted + report.chunks_reextracted
    assert report.usage.input_tokens == 100 * sent_ahead  # every call paid for is charged
    # ... once: the workers journalled and charged the answers, the report only counted them.
    with State.open(tmp_path / "ahead" / "state" / "state.db") as state:
        ledger = state.usage.totals_for_run(report.run_id)
    assert (ledger.calls, ledger.usage.input_tokens) == (sent_ahead, 100 * sent_ahead)


def test_a_stop_request_leaves_the_answers_in_flight_journalled(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    ws.write_log("a.jsonl", _rows())
    settings = ws.settings(llm={"concurrency": 4})
    stop = threading.Event()
    model = ContextModel()

    def stop_after_first(request: RecordedRequest) -> ToolUse:
        stop.set()
        return model(request)

    from memoryd.jobs.environment import open_state
    from memoryd.jobs.heartbeat import build_heartbeat
    from memoryd.jobs.reconcile import reconcile_state

    env = ws.environment()
    with FakeAnthropicServer(handler=stop_after_first) as server:
        with open_state(settings, env) as state, ws.extractor(settings, server.base_url) as ex:
            heartbeat = build_heartbeat(settings, env, state, ex, should_stop=stop.is_set)
            reconcile_state(state, heartbeat.git, heartbeat.settings.host, env.clock())
            report = heartbeat.run()
        first = len(server.message_requests)
        assert report.outcome == "stopped" and report.chunks_deferred > 0
        assert 1 <= report.chunks_extracted < 8
        again = ws.heartbeat(ws.settings(llm={"concurrency": 1}), server.base_url)
        assert again.exit_code == EXIT_OK
        # Every answer that arrived was journalled and is reused (made right for what was filed
        # since, or asked again when it would be wrong): no chunk is paid for twice but those.
        assert again.chunks_reused == first - report.chunks_extracted - report.chunks_reextracted
        assert again.chunks_extracted == 8 - report.chunks_extracted - again.chunks_reused
    reference = Workspace(tmp_path / "reference")
    reference.init()
    reference.write_log("a.jsonl", _rows())
    model.delay = 0
    with FakeAnthropicServer(handler=model) as server:
        reference.heartbeat(reference.settings(llm={"concurrency": 1}), server.base_url)
    assert _normalized(ws) == _normalized(reference)


def test_rate_limit_headers_slow_every_call_down(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    ws.write_log("a.jsonl", _rows()[:4])
    limited = Error(429, "rate_limit_error", headers={"retry-after": "3"})
    model = ContextModel(delay=0)
    with FakeAnthropicServer([limited], handler=model) as server:
        report = ws.heartbeat(ws.settings(llm={"concurrency": 4}), server.base_url)
    assert report.exit_code == EXIT_OK
    assert report.chunks_extracted == 4
    assert 3.0 in ws.waits


def test_a_rate_limited_account_is_slowed_down_not_failed(tmp_path: Path) -> None:
    """The API's window limit (2 requests a second here) with 4 calls in flight and real
    waits: every chunk is filed; the remaining-0 headers make the calls wait for the reset."""
    from memoryd.extractors.llm_extractor import LLMExtractor
    from memoryd.jobs.environment import open_state
    from memoryd.jobs.heartbeat import build_heartbeat
    from memoryd.llm.anthropic_client import AnthropicClient

    ws = Workspace(tmp_path)
    ws.init()
    ws.write_log("a.jsonl", _rows()[:6])
    settings = ws.settings(llm={"concurrency": 4, "max_attempts": 4})
    env = ws.environment()
    model = ContextModel(delay=0)
    with (
        FakeAnthropicServer(handler=model, requests_per_window=2, window_seconds=1) as server,
        AnthropicClient(
            api_key="sk-ant-test",
            base_url=server.base_url,
            timeout_seconds=5,
            max_attempts=4,
            max_wait_seconds=2,
        ) as client,
        open_state(settings, env) as state,
    ):
        extractor = LLMExtractor(client, model=settings.llm.model, max_tokens=500, scrub=str)
        report = build_heartbeat(settings, env, state, extractor).run()
        answered = [r for r in server.message_requests]
    assert report.exit_code == EXIT_OK
    assert report.chunks_extracted == 6
    assert len(answered) - server.rate_limited == 6 + report.chunks_reextracted


class HeldExtractor:
    """Files marker lines; every call after the first waits until `calls` calls have arrived,
    and the last of them also asks the heartbeat to stop: a stop while calls are in flight."""

    def __init__(self, calls: int) -> None:
        from memoryd.extractors.extract import MarkersExtractor

        self.inner = MarkersExtractor(lambda text: text)
        self.prompt_refs = self.inner.prompt_refs
        self.calls = calls
        self.arrived = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.stop = threading.Event()

    def extract(self, chunk: Any, context: Any, may_retry: Any = None) -> Any:
        with self.lock:
            self.arrived += 1
            arrived = self.arrived
        if arrived == self.calls:
            self.stop.set()
            self.release.set()
        elif arrived > 1:
            self.release.wait(timeout=10)
        return self.inner.extract(chunk, context)


def test_after_a_stop_every_answer_in_flight_is_kept_for_the_next_heartbeat(
    tmp_path: Path,
) -> None:
    from memoryd.jobs.environment import open_state
    from memoryd.jobs.heartbeat import build_heartbeat

    ws = Workspace(tmp_path)
    ws.init()
    # Rules sharing no word: a filed rule is shown to a chunk only when they share a word.
    rules = ("Prefers tea", "Reviews diffs", "Walks daily", "Avoids Fridays")
    rows = [
        turn("user", f"tacit: {rule}", f"2026-03-0{day}T10:00:00Z")
        for day, rule in enumerate(rules, start=1)
    ]
    ws.write_log("a.jsonl", rows)
    settings = ws.settings(llm={"concurrency": 4})
    env = ws.environment()
    extractor = HeldExtractor(calls=4)
    with open_state(settings, env) as state:
        heartbeat = build_heartbeat(
            settings, env, state, extractor, should_stop=extractor.stop.is_set
        )
        report = heartbeat.run()
    assert report.outcome == "stopped"
    assert (report.chunks_extracted, report.chunks_deferred) == (2, 2)
    assert extractor.arrived == 4  # chunks 3 and 4 were in flight when the stop came
    again = HeldExtractor(calls=0)
    with open_state(settings, env) as state:
        report = build_heartbeat(settings, env, state, again).run()
    assert report.outcome == "ok"
    # Both answers in flight at the stop were journalled on arrival and hold for the store the
    # next heartbeat offers (chunk 4's rule shares no word with chunk 3's): neither is asked again.
    assert (report.chunks_reused, report.chunks_extracted, again.arrived) == (2, 0, 0)
    text = ws.read("MEMORY.md")
    assert all(text.count(rule) == 1 for rule in rules)


def test_a_heartbeat_after_a_recent_valid_answer_sends_ahead_from_its_first_call(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    rows = _rows()
    ws.write_log("a.jsonl", rows[:2])
    settings = ws.settings(llm={"concurrency": 4})
    with FakeAnthropicServer(handler=ContextModel(delay=0)) as server:
        assert ws.heartbeat(settings, server.base_url).chunks_extracted == 2
    ws.write_log("a.jsonl", rows[2:], append=True)
    model = ContextModel(overlap=True)
    model.calls = 1  # so that the heartbeat's first call waits for a second one
    with FakeAnthropicServer(handler=model) as server:
        report = ws.heartbeat(settings, server.base_url)
    assert report.exit_code == EXIT_OK and report.chunks_extracted == 6
    assert model.most > 1  # the model proved itself minutes ago: no call alone first
    ws.now += timedelta(hours=2)
    ws.write_log("b.jsonl", rows[:3])
    model = ContextModel(overlap=True, wait=1)
    model.calls = 1
    with FakeAnthropicServer(handler=model) as server:
        report = ws.heartbeat(settings, server.base_url)
    assert report.chunks_extracted == 3
    assert model.most == 1  # hours later: one call alone first (it waited for company)


def test_slots_freed_while_a_chunk_waits_for_its_answer_are_filled_at_once(
    tmp_path: Path,
) -> None:
    """The second chunk's answer is slow; the calls sent ahead of it answer at once. While the
    heartbeat waits for that answer, every slot the others free is filled with the next chunk:
    the calls stay `concurrency` in flight, not one batch per chunk applied."""
    ws = Workspace(tmp_path)
    ws.init()
    ws.write_log("a.jsonl", _rows())  # 8 chunks, one a day
    context = ContextModel(delay=0)
    arrived: list[str] = []
    lock = threading.Condition()

    def model(request: RecordedRequest) -> ToolUse:
        day = re.search(r"Customer (\d)", transcript_of(request))
        with lock:
            arrived.append(day.group(1) if day else "?")
            lock.notify_all()
            if arrived[-1] == "2":  # held until every later chunk was sent (or 3 s at most)
                lock.wait_for(lambda: len(arrived) >= 8, timeout=3)
                held_while.append(len(arrived) - arrived.index("2") - 1)
        return context(request)

    held_while: list[int] = []
    with FakeAnthropicServer(handler=model) as server:
        report = ws.heartbeat(ws.settings(llm={"concurrency": 3}), server.base_url)
    assert report.exit_code == EXIT_OK and report.chunks_extracted == 8
    # Chunks 3 to 8 are sent while chunk 2's answer is awaited: with 3 slots, the two beside it
    # are refilled as they answer (all 6 at once unless the machine is very busy; without the
    # refill: 2, the first batch only, however long the wait).
    assert len(held_while) == 1 and held_while[0] > 2
