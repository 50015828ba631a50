"""Run-level LLM errors, through the real SDK against the fake server.

A refused key, a missing permission, a retired model, no credit left, the endpoint's size limit,
or a model that answers nothing but invalid answers: each heartbeat stops at its first such
answer with every cursor held, charges no chunk with a failure, quarantines nothing and exits 78,
`status` shows what to fix, and once the operator has fixed it every fact is filed exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.fakes.anthropic_wire import CREDIT_TOO_LOW_MESSAGE, PERMISSION_MESSAGE
from tests.fakes.fake_anthropic import (
    Answer,
    FakeAnthropicServer,
    RecordedRequest,
    Text,
    ToolUse,
    credit_too_low,
    permission_denied,
    prompt_too_long,
    request_too_large,
)
from tests.support.harness import TEST_KEY, Workspace, turn

from memoryd.daemon.status import collect_status, render_status
from memoryd.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_OK
from memoryd.heartbeat import HeartbeatReport
from memoryd.jobs.environment import open_state
from memoryd.settings import Settings

NEW_MODEL = "claude-haiku-6-0"
INVALID = ToolUse({"facts": [{"fact": "no entity"}]})
PEOPLE = [
    ("a.jsonl", "Ann Lee", "Joined Acme as CTO", "2026-03-01"),
    ("b.jsonl", "Bob Roe", "Moved to Lisbon", "2026-03-02"),
    ("c.jsonl", "Cy Dow", "Runs the Atlas project", "2026-03-03"),
    ("d.jsonl", "Di Fox", "Prefers morning meetings", "2026-03-04"),
]
_REMEMBER = re.compile(r"remember: (\w+) ([^:\n]+): ([^\n]+)")


def transcript_of(request: RecordedRequest) -> str:
    content = request.body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def marker_model(request: RecordedRequest) -> ToolUse:
    """A model that files each `remember:` line of the transcript as a significant fact."""
    facts, entities = [], []
    for kind, name, fact in _REMEMBER.findall(transcript_of(request)):
        facts.append({"entity": {"name": name, "kind": kind}, "fact": fact, "category": "status"})
        entities.append({"name": name, "kind": kind, "significant": True})
    return ToolUse({"facts": facts, "entities": entities})


@dataclass
class Model:
    """The fake server's model: `fault` answers instead of the real one while it is set;
    `poisoned` transcripts always get an invalid answer (a chunk at fault, not the model)."""

    fault: Answer | None = None
    poisoned: set[str] = field(default_factory=set)

    def __call__(self, request: RecordedRequest) -> Answer:
        if self.fault is not None:
            return self.fault
        if any(word in transcript_of(request) for word in self.poisoned):
            return INVALID
        return marker_model(request)


@dataclass(frozen=True)
class Scenario:
    """One run-level error: how the endpoint breaks, how the operator fixes it, and what memoryd
    must say about it."""

    kind: str
    status: int | None
    message: str | None  # the server's own words, when it said any
    break_it: Callable[[FakeAnthropicServer, Model], None]
    fix_it: Callable[[FakeAnthropicServer, Model], None]
    fixed_model: str = "claude-haiku-5-5"
    # Requests sent by the first heartbeat with the error, and by each one after it.
    requests: tuple[int, int] = (1, 1)

    def __str__(self) -> str:
        return self.kind


def _fault(answer: Answer | None) -> Callable[[FakeAnthropicServer, Model], None]:
    def apply(_server: FakeAnthropicServer, model: Model) -> None:
        model.fault = answer

    return apply


def _key(key: str) -> Callable[[FakeAnthropicServer, Model], None]:
    def apply(server: FakeAnthropicServer, _model: Model) -> None:
        server.api_key = key

    return apply


def _retire(server: FakeAnthropicServer, _model: Model) -> None:
    server.models = frozenset({NEW_MODEL})


def _nothing(_server: FakeAnthropicServer, _model: Model) -> None:
    """The operator's fix is in the configuration (llm.model), not on the server."""


SCENARIOS = [
    Scenario("authentication", 401, "invalid x-api-key", _key("sk-ant-revoked"), _key(TEST_KEY)),
    Scenario("permission", 403, PERMISSION_MESSAGE, _fault(permission_denied()), _fault(None)),
    Scenario(
        "model_not_found",
        404,
        "model: claude-haiku-5-5",
        _retire,
        _nothing,
        fixed_model=NEW_MODEL,
    ),
    Scenario("billing", 400, CREDIT_TOO_LOW_MESSAGE, _fault(credit_too_low()), _fault(None)),
    Scenario(
        "request_too_large",
        413,
        "Request exceeds the maximum allowed number of bytes.",
        _fault(request_too_large()),
        _fault(None),
    ),
    # Three chunks in a row, each asked twice (the corrective retry), prove it the first time;
    # after that one chunk's invalid answer confirms it.
    Scenario(
        "invalid_answers",
        None,
        None,
        _fault(INVALID),
        _fault(None),
        requests=(6, 2),
    ),
]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    for name, person, fact, day in PEOPLE:
        workspace.write_log(
            name, [turn("user", f"remember: person {person}: {fact}", f"{day}T09:00:00Z")]
        )
    return workspace


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def server(model: Model) -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(handler=model, api_key=TEST_KEY) as fake:
        yield fake


def settings(ws: Workspace, model: str = "claude-haiku-5-5") -> Settings:
    return ws.settings(llm={"model": model, "rewrite_model": model})


def heartbeat(
    ws: Workspace, config: Settings, server: FakeAnthropicServer
) -> tuple[HeartbeatReport, int, list[MutableMapping[str, Any]]]:
    """One heartbeat: its report, the requests it sent and its log events."""
    before = len(server.message_requests)
    with capture_logs() as logs:
        report = ws.heartbeat(config, server.base_url)
    return report, len(server.message_requests) - before, logs


def failures(ws: Workspace, config: Settings) -> tuple[int, int]:
    """(failing chunks, quarantined chunks) as the state database has them."""
    with open_state(config, ws.environment()) as state:
        return len(state.failures.failing()), len(state.failures.quarantined())


def filed(ws: Workspace) -> dict[str, list[str]]:
    folders = sorted((ws.store / "life/areas/people").glob("*/items.json"))
    return {path.parent.name: [f["fact"] for f in ws.facts(str(path.parent))] for path in folders}


EVERYONE_ONCE = {
    "ann-lee": ["Joined Acme as CTO"],
    "bob-roe": ["Moved to Lisbon"],
    "cy-dow": ["Runs the Atlas project"],
    "di-fox": ["Prefers morning meetings"],
}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_a_run_level_error_stops_every_heartbeat_charges_no_chunk_and_is_fixed_cleanly(
    ws: Workspace, server: FakeAnthropicServer, model: Model, scenario: Scenario
) -> None:
    config = settings(ws)
    scenario.break_it(server, model)
    for attempt in range(4):
        report, sent, logs = heartbeat(ws, config, server)
        assert report.outcome == "unusable"
        assert report.exit_code == EXIT_CONFIG
        assert sent == scenario.requests[0 if attempt == 0 else 1] <= (6 if attempt == 0 else 2)
        assert (report.chunks_failed, report.chunks_quarantined) == (0, 0)
        assert report.counters.facts_added == 0 and filed(ws) == {}
        assert report.unusable is not None and report.unusable.kind == scenario.kind
        assert failures(ws, config) == (0, 0)
        unusable = [e for e in logs if e["event"] == "llm.unusable"]
        if attempt == 0:
            # One line saying what to fix, where, and what the server itself said.
            (line,) = unusable
            assert line["log_level"] == "error"
            assert (line["kind"], line["endpoint"], line["model"]) == (
                scenario.kind,
                server.base_url,
                "claude-haiku-5-5",
            )
            assert line["status"] == scenario.status
            if scenario.message is not None:
                assert line["message"] == scenario.message
            assert line["remedy"]
            assert TEST_KEY not in repr(logs)
        else:
            assert unusable == []  # the same problem within the hour: not repeated
        status = collect_status(config, ws.environment())
        assert status["llm_unusable"]["kind"] == scenario.kind
        assert status["llm_unusable"]["endpoint"] == server.base_url
        assert status["quarantined"] == [] and status["failing_chunks"] == 0
        assert status["last_heartbeat"]["outcome"] == "unusable"
        assert "LLM UNUSABLE" in render_status(status)
        assert all(source["lag_bytes"] > 0 for source in status["sources"])  # nothing consumed

    scenario.fix_it(server, model)
    fixed = settings(ws, scenario.fixed_model)
    report, sent, logs = heartbeat(ws, fixed, server)
    assert report.outcome == "ok", report.stop_reason
    assert report.exit_code == EXIT_OK
    assert sent == len(PEOPLE)
    assert filed(ws) == EVERYONE_ONCE
    assert failures(ws, fixed) == (0, 0)
    status = collect_status(fixed, ws.environment())
    assert status["llm_unusable"] is None
    assert "LLM UNUSABLE" not in render_status(status)
    assert all(source["lag_bytes"] == 0 for source in status["sources"])

    again, sent, _logs = heartbeat(ws, fixed, server)
    assert (again.outcome, sent) == ("nothing-new", 0)
    assert filed(ws) == EVERYONE_ONCE


def test_llm_unusable_is_logged_again_once_the_hour_is_over(
    ws: Workspace, server: FakeAnthropicServer
) -> None:
    server.api_key = "sk-ant-revoked"
    config = settings(ws)
    logged = []
    for _half_hour in range(5):
        _report, sent, logs = heartbeat(ws, config, server)
        assert sent == 1
        logged.append(sum(e["event"] == "llm.unusable" for e in logs))
        ws.now += timedelta(minutes=30)
    assert logged == [1, 0, 1, 0, 1]
    with open_state(config, ws.environment()) as state:
        since = state.meta.get_json("llm.unusable")["since"]
    assert since == "2026-03-10T12:00:00+00:00"  # the first time it was seen


def test_a_different_problem_is_logged_at_once(ws: Workspace, server: FakeAnthropicServer) -> None:
    server.api_key = "sk-ant-revoked"
    config = settings(ws)
    heartbeat(ws, config, server)
    server.api_key = TEST_KEY
    server.fail_next(credit_too_low())
    _report, _sent, logs = heartbeat(ws, config, server)
    (line,) = [e for e in logs if e["event"] == "llm.unusable"]
    assert line["kind"] == "billing"


@pytest.mark.parametrize("concurrency", [1, 4])
def test_credit_running_out_mid_run_keeps_what_was_filed_and_holds_the_rest(
    ws: Workspace, server: FakeAnthropicServer, model: Model, concurrency: int
) -> None:
    config = ws.settings(llm={"concurrency": concurrency})
    server.enqueue(marker_model_for("Ann Lee", "Joined Acme as CTO"))  # the first chunk
    model.fault = credit_too_low()  # every later one
    report, sent, _logs = heartbeat(ws, config, server)
    assert (report.outcome, report.exit_code) == ("unusable", EXIT_CONFIG)
    # The calls already in flight when the error came back were sent too.
    assert sent == 2 if concurrency == 1 else 2 <= sent <= 1 + concurrency
    assert report.commit is not None  # what was applied before the error is committed
    assert filed(ws) == {"ann-lee": ["Joined Acme as CTO"]}
    assert failures(ws, config) == (0, 0)
    model.fault = None
    fixed, sent, _logs = heartbeat(ws, config, server)
    assert (fixed.outcome, sent) == ("ok", 3)
    assert filed(ws) == EVERYONE_ONCE


def marker_model_for(person: str, fact: str) -> ToolUse:
    return ToolUse(
        {
            "facts": [
                {"entity": {"name": person, "kind": "person"}, "fact": fact, "category": "status"}
            ],
            "entities": [{"name": person, "kind": "person", "significant": True}],
        }
    )


def test_invalid_answers_short_of_a_streak_are_the_chunks_own_failures(
    ws: Workspace, server: FakeAnthropicServer, model: Model
) -> None:
    # Ann's transcript always gets an invalid answer, the others valid ones: the model works,
    # so Ann's chunk fails (and is quarantined after 3 heartbeats) while the rest is filed.
    model.poisoned = {"Ann Lee"}
    config = settings(ws)
    report, sent, _logs = heartbeat(ws, config, server)
    assert report.outcome == "failed"
    assert report.exit_code == EXIT_FAILED
    assert sent == 2 + 3  # Ann's chunk and its corrective retry, then the three others
    assert report.chunks_failed == 1
    assert failures(ws, config) == (1, 0)
    assert set(filed(ws)) == {"bob-roe", "cy-dow", "di-fox"}
    for _heartbeat in range(2):
        report, _sent, _logs = heartbeat(ws, config, server)
    assert report.chunks_quarantined == 1
    assert failures(ws, config) == (0, 1)
    assert collect_status(config, ws.environment())["llm_unusable"] is None


def test_a_working_model_behind_a_bad_chunk_is_noticed_within_the_hour(
    ws: Workspace, server: FakeAnthropicServer, model: Model
) -> None:
    config = settings(ws)
    model.fault = INVALID
    first, sent, _logs = heartbeat(ws, config, server)
    assert (first.outcome, sent) == ("unusable", 6)
    # The model is fixed, but the oldest chunk is one it cannot answer: within the hour that
    # one invalid answer still confirms the problem (two requests, no failure counted)...
    model.fault = None
    model.poisoned = {"Ann Lee"}
    ws.now += timedelta(minutes=30)
    second, sent, _logs = heartbeat(ws, config, server)
    assert (second.outcome, sent, second.chunks_failed) == ("unusable", 2, 0)
    # ...and after it a whole streak is asked for again: the next chunks answer, so Ann's
    # chunk is a failure of its own and everything else is filed.
    ws.now += timedelta(minutes=31)
    with capture_logs() as logs:
        third = ws.heartbeat(config, server.base_url)
    assert third.outcome == "failed"
    assert third.chunks_failed == 1
    assert set(filed(ws)) == {"bob-roe", "cy-dow", "di-fox"}
    assert "llm.recovered" in [e["event"] for e in logs]
    assert collect_status(config, ws.environment())["llm_unusable"] is None


def test_refusals_are_about_the_content_never_the_model(
    ws: Workspace, server: FakeAnthropicServer
) -> None:
    # Three refusals in a row are three chunks' own failures, each asked once: asking again to
    # follow the schema does not change a refusal.
    config = settings(ws)
    server.enqueue(*[Text("I can't help with that.", stop_reason="refusal")] * 3)
    report, sent, _logs = heartbeat(ws, config, server)
    assert (report.outcome, report.exit_code) == ("failed", EXIT_FAILED)
    assert sent == 4
    assert report.chunks_failed == 3
    assert filed(ws) == {"di-fox": ["Prefers morning meetings"]}
    assert collect_status(config, ws.environment())["llm_unusable"] is None


def test_a_prompt_too_long_for_one_chunk_is_that_chunks_failure(
    ws: Workspace, server: FakeAnthropicServer
) -> None:
    config = settings(ws)
    server.enqueue(prompt_too_long())
    report, sent, logs = heartbeat(ws, config, server)
    assert (report.outcome, report.exit_code, sent) == ("failed", EXIT_FAILED, 4)
    assert report.chunks_failed == 1
    assert failures(ws, config) == (1, 0)
    assert set(filed(ws)) == {"bob-roe", "cy-dow", "di-fox"}
    assert "llm.unusable" not in [entry["event"] for entry in logs]
    assert collect_status(config, ws.environment())["llm_unusable"] is None
