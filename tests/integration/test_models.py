"""Every current model works: heartbeats and the rewrite with models that refuse a forced tool
choice (the fake server answers them exactly as the real API does), through the real SDK."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, Text, ToolUse
from tests.support.harness import Workspace, turn
from tests.support.marker_model import marker_model, user_text
from tests.support.rewrite import Planted, plant
from tests.support.rewrite_run import run as run_rewrite
from tests.support.rewrite_run import summarizer

from memoryd.errors import EXIT_FAILED, EXIT_OK
from memoryd.jobs.heartbeat import dry_run_heartbeat


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    workspace.write_log(
        "a.jsonl",
        [
            turn("user", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z"),
            turn("user", "remember: company Acme: Renewed for 2027", "2026-03-02T09:00:00Z"),
        ],
    )
    return workspace


def choices(server: FakeAnthropicServer) -> list[str]:
    return [request.body["tool_choice"]["type"] for request in server.message_requests]


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-opus-5-5", "claude-mythos-5-2"])
def test_a_heartbeat_with_a_model_refusing_a_forced_tool_files_its_chunks(
    ws: Workspace, model: str
) -> None:
    with FakeAnthropicServer(handler=marker_model) as server:
        report = ws.heartbeat(ws.settings(llm={"model": model}), server.base_url)
        sent = server.message_requests

    assert report.exit_code == EXIT_OK
    assert (report.chunks, report.chunks_extracted, report.chunks_failed) == (2, 2, 0)
    assert choices(server) == ["auto", "auto"]  # known: never a refused forced request
    assert all(request.body["tools"][0]["strict"] is True for request in sent)
    assert ws.facts("life/areas/people/jane-doe")[0]["fact"] == "Joined Acme as CTO"
    assert ws.facts("life/areas/companies/acme")[0]["fact"] == "Renewed for 2027"


def test_a_text_answer_is_re_asked_once_and_then_filed(ws: Workspace) -> None:
    with FakeAnthropicServer([Text("Jane joined Acme.")], handler=marker_model) as server:
        report = ws.heartbeat(ws.settings(llm={"model": "claude-sonnet-5-5"}), server.base_url)
        sent = server.message_requests

    assert report.exit_code == EXIT_OK
    assert (report.chunks_extracted, report.chunks_failed) == (2, 0)
    assert len(sent) == 3  # the first chunk asked twice
    assert "no record_memories call" in user_text(sent[1])
    assert "no record_memories call" not in user_text(sent[0])
    assert report.usage.input_tokens == 300  # the text answer was paid for, and charged


def test_a_model_answering_text_twice_fails_the_chunk_as_an_invalid_answer(ws: Workspace) -> None:
    with FakeAnthropicServer(default=Text("Nothing to record.")) as server:
        report = ws.heartbeat(ws.settings(llm={"model": "claude-fable-5-1"}), server.base_url)
        sent = len(server.message_requests)

    assert report.exit_code == EXIT_FAILED
    assert (report.chunks_extracted, report.chunks_failed) == (0, 1)
    assert sent == 2  # asked once more, then failed; the file's later chunk waits behind it


def test_an_unknown_model_refusing_a_forced_tool_is_learnt_and_never_charged(
    ws: Workspace,
) -> None:
    model = "claude-novel-6"
    with (
        FakeAnthropicServer(handler=marker_model, refusing_forced_tool={model}) as server,
        capture_logs() as events,
    ):
        report = ws.heartbeat(ws.settings(llm={"model": model}), server.base_url)
        first = choices(server)
        ws.write_log(
            "b.jsonl",
            [turn("user", "remember: project Atlas: Shipped v2", "2026-03-03T09:00:00Z")],
        )
        later = ws.heartbeat(ws.settings(llm={"model": model}), server.base_url)
        second = choices(server)[len(first) :]

    assert report.exit_code == later.exit_code == EXIT_OK
    assert (report.chunks_extracted, report.chunks_failed, report.chunks_quarantined) == (2, 0, 0)
    assert first == ["tool", "auto", "auto"]  # refused once, resent at once, then remembered
    assert second == ["auto"]
    assert report.usage.input_tokens == 200  # two answers paid; the refused 400 is not charged
    assert [e["model"] for e in events if e["event"] == "llm.tool_choice_auto"] == [model]
    assert any("Shipped v2" in text for text in ws.memories().values())


def test_the_rewrite_works_with_a_rewrite_model_refusing_a_forced_tool(ws: Workspace) -> None:
    plant(ws.store, [Planted("Jane Doe", "Joined Acme as CTO", age=1)], today=ws.now.date())
    settings = ws.settings(llm={"rewrite_model": "claude-sonnet-5-5"})
    with FakeAnthropicServer(handler=summarizer) as server:
        report = run_rewrite(ws, settings, server.base_url)
        sent = server.message_requests

    assert report.exit_code == EXIT_OK
    assert report.summaries == 1 and report.template_reason is None
    assert [request.body["model"] for request in sent] == ["claude-sonnet-5-5"]
    assert choices(server) == ["auto"]
    assert "- Joined Acme as CTO [jane-doe-001]" in ws.read("life/areas/people/jane-doe/summary.md")


def test_a_consolidation_answered_in_text_is_asked_once_more(ws: Workspace) -> None:
    folder = ws.store / "agents" / "ops"
    folder.mkdir(parents=True)
    index = ["# Skills of ops", "", "One line per topic.", ""]
    for number in range(55):
        (folder / f"tool{number}.md").write_text(f"# tool{number}\n\n- tool{number} needs sudo\n")
        index.append(f"- [tool{number}](tool{number}.md): tool{number} needs sudo")
    (folder / "skills-index.md").write_text("\n".join(index) + "\n")
    texts_first: list[str] = []

    def model(request: RecordedRequest) -> ToolUse | Text:
        content = request.body["messages"][0]["content"]
        if not texts_first:  # the first consolidation request is answered in text
            texts_first.append(content)
            return Text("I would merge them all into one sudo topic.")
        tips = [
            {"text": "Run every tool with sudo -n", "from": re.findall(r"^(t\d+) ", content, re.M)}
        ]
        return ToolUse({"topics": [{"topic": "sudo", "tips": tips}]})

    settings = ws.settings(llm={"rewrite_model": "claude-opus-5-5"})
    with FakeAnthropicServer(handler=model) as server:
        report = run_rewrite(ws, settings, server.base_url)
        sent = server.message_requests

    assert report.consolidated_agents == ["ops"]
    assert len(sent) == 2 and choices(server) == ["auto", "auto"]
    assert "did not call the consolidate_skills tool" in sent[1].body["messages"][0]["content"]
    assert (folder / "sudo.md").read_text() == "# sudo\n\n- Run every tool with sudo -n\n"


@pytest.mark.parametrize(("model", "chunks"), [("claude-sonnet-5-5", 1), ("claude-haiku-5-5", 2)])
def test_chunks_are_cut_in_the_models_own_tokens(tmp_path: Path, model: str, chunks: int) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    words = " ".join(f"word{n % 10}" for n in range(300))  # about 450 estimated tokens
    ws.write_log("a.jsonl", [turn("user", words, "2026-03-01T09:00:00Z")])
    settings = ws.settings(llm={"model": model, "chunk_tokens": 500})
    report = dry_run_heartbeat(settings, ws.environment())
    # Under 500 tokens at chars/4, over it at Haiku 5.5's 1.3 tokens per chars/4 token.
    assert report["chunks"] == chunks
