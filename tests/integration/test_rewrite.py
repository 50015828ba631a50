"""The weekly rewrite end to end: a real store and state, the real SDK over HTTP to the fake API.

"Today" is fixed (the workspace clock, 2026-03-10). Facts are filed through the store modules
with chosen ages and access counts, so each test knows exactly which facts are hot, warm, cold.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace
from tests.support.rewrite import Planted, plant
from tests.support.rewrite_run import run, summarizer

from memoryd.daemon.status import collect_status
from memoryd.errors import EXIT_OK
from memoryd.jobs.environment import open_state
from memoryd.jobs.rewrite import explain, poll_rewrite_batch, run_rewrite

JANE = "life/areas/people/jane-doe/summary.md"
ACME = "life/areas/companies/acme/summary.md"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    plant(
        workspace.store,
        [
            Planted("Jane Doe", "Joined Acme as CTO", age=1),
            Planted("Jane Doe", "Lives in Lisbon", age=15),
            Planted("Jane Doe", "COLD-JANE moved to Mars", age=100),
            Planted("Acme", "COLD-ACME closed its Paris office", age=200, kind="company"),
        ],
        today=workspace.now.date(),
    )
    return workspace


def sent(server: FakeAnthropicServer) -> str:
    return json.dumps([request.body for request in server.requests])


def test_cold_facts_are_never_sent_nor_summarized_and_a_rerun_does_nothing(
    ws: Workspace,
) -> None:
    settings = ws.settings()
    with FakeAnthropicServer(handler=summarizer) as server, capture_logs() as logs:
        report = run(ws, settings, server.base_url)
        first_requests = len(server.requests)
        again = run(ws, settings, server.base_url)
        assert len(server.requests) == first_requests  # idempotent: no call at all
    assert report.exit_code == EXIT_OK and report.outcome == "ok"
    assert (report.summaries, report.archived, report.llm_calls) == (1, 1, 1)
    assert first_requests == 1  # only Jane has hot or warm facts
    assert "COLD-" not in sent(server)
    request_text = server.message_requests[0].body["messages"][0]["content"]
    assert request_text.index("Joined Acme as CTO") < request_text.index("Lives in Lisbon")
    jane = ws.read(JANE)
    assert jane == (
        "# Jane Doe\n\n- Joined Acme as CTO [jane-doe-001]\n- Lives in Lisbon [jane-doe-002]\n"
    )
    assert "COLD-" not in jane  # Jane's cold fact stays out: she has hot and warm ones
    # Acme has nothing hot or warm: its summary says what it is, from its cold facts, marked as
    # old, without a model; so does its gist.
    assert ws.read(ACME) == (
        "# Acme\n\n## Background\n\n- COLD-ACME closed its Paris office (from 2025-08) [acme-001]\n"
    )
    assert "Joined Acme as CTO" in ws.read("life/index.md")
    assert "COLD-ACME closed its Paris office (from 2025-08)" in ws.read("life/index.md")
    message = ws.git("log", "-1", "--format=%B")
    assert message.startswith("rewrite: 1 summary, 1 archived\n")
    assert f"Memoryd-Run: {report.run_id}" in message
    assert "summary-system@1" in message
    finished = [entry for entry in logs if entry["event"] == "rewrite.finished"]
    assert finished[0]["summaries"] == 1 and finished[0]["template_reason"] is None
    assert again.outcome == "nothing-to-do" and again.commit is None


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_an_unreachable_llm_gives_the_template_and_the_run_says_so(ws: Workspace) -> None:
    settings = ws.settings()
    with capture_logs() as logs:
        report = run(ws, settings, closed_port_url())
    assert report.exit_code == EXIT_OK  # the work was done, by the template
    assert report.template_reason == "llm unreachable" and report.templated == 1
    assert ws.read(JANE) == (
        "# Jane Doe\n\n## Recent\n\n- Joined Acme as CTO [jane-doe-001]\n\n"
        "## Background\n\n- Lives in Lisbon [jane-doe-002]\n"
    )
    assert ws.commits()[0] == "rewrite: 1 summary, 1 archived (template: llm unreachable)"
    finished = next(entry for entry in logs if entry["event"] == "rewrite.finished")
    assert finished["template_reason"] == "llm unreachable"
    # Once the LLM is back, the templated summary is written by it.
    with FakeAnthropicServer(handler=summarizer) as server:
        later = run(ws, settings, server.base_url)
        assert len(server.message_requests) == 1
    assert later.summaries == 1 and later.template_reason is None
    assert "## Recent" not in ws.read(JANE)


def test_the_markers_provider_renders_the_template_without_any_client(ws: Workspace) -> None:
    settings = ws.settings("markers")
    report = run(ws, settings, None)
    assert report.template_reason == "markers provider"
    assert "[jane-doe-001]" in ws.read(JANE)
    again = run(ws, settings, None)
    assert again.commit is None and again.outcome == "nothing-to-do"


@pytest.mark.parametrize(
    "bad_summary",
    [
        "- Joined Acme as CTO [jane-doe-001]\n- Moved to Mars [jane-doe-003]",  # a cold id
        "- Joined Acme as CTO [jane-doe-001]\n- Also likes cats [jane-doe-042]",  # unknown id
        "- Joined Acme as CTO [jane-doe-001]\nShe is lovely.",  # an uncited line
    ],
)
def test_an_invalid_summary_is_refused_and_the_previous_one_stays(
    ws: Workspace, bad_summary: str
) -> None:
    settings = ws.settings()
    before = ws.read(JANE)
    with FakeAnthropicServer(default=ToolUse({"summary": bad_summary})) as server:
        report = run(ws, settings, server.base_url)
        assert len(server.message_requests) == 2  # one corrective retry, then refused
        # Not recorded as rewritten: the next run asks again.
        run(ws, settings, server.base_url)
        assert len(server.message_requests) == 4
    assert report.refused == 1 and report.summaries == 0
    assert ws.read(JANE) == before
    assert "Mars" not in ws.read(JANE) and "cats" not in ws.read(JANE)


def test_batches_submit_then_apply_on_a_later_run_surviving_a_restart(ws: Workspace) -> None:
    settings = ws.settings(rewrite={"use_batches": True})
    before = ws.read(JANE)
    with FakeAnthropicServer(handler=summarizer, batch_polls_before_end=1) as server:
        submitted = run(ws, settings, server.base_url)
        batch_posts = [r for r in server.requests if r.path == "/v1/messages/batches"]
        assert len(batch_posts) == 1 and not server.message_requests
        custom_ids = [item["custom_id"] for item in batch_posts[0].body["requests"]]
        assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cid) for cid in custom_ids)
        assert submitted.batch_submitted and submitted.exit_code == EXIT_OK
        assert ws.read(JANE) == before  # nothing applied before the batch ends
        # A restart: fresh state handle and client. The batch is polled, not paid again.
        pending = run(ws, settings, server.base_url)
        assert pending.outcome == "batch-pending" and pending.commit is None
        applied = run(ws, settings, server.base_url)
        assert applied.batch_applied == submitted.batch_submitted
        assert ws.read(JANE).startswith("# Jane Doe\n\n- Joined Acme as CTO [jane-doe-001]")
        assert ws.commits()[0].startswith("rewrite: 1 summary")
        quiet = run(ws, settings, server.base_url)
        batch_posts = [r for r in server.requests if r.path == "/v1/messages/batches"]
        assert len(batch_posts) == 1 and not server.message_requests
    assert quiet.outcome == "nothing-to-do" and quiet.commit is None
    with open_state(settings, ws.environment()) as state:
        assert state.rewrites.pending_batch() is None
        row = state.db.query_one("SELECT batch, job FROM usage")
        assert row is not None and (row["batch"], row["job"]) == (1, "rewrite")


def test_a_batch_answer_for_changed_facts_is_stale_and_not_applied(ws: Workspace) -> None:
    settings = ws.settings(rewrite={"use_batches": True})
    with FakeAnthropicServer(handler=summarizer) as server:
        run(ws, settings, server.base_url)
        plant(ws.store, [Planted("Jane Doe", "Became CEO", age=0)], today=ws.now.date())
        applied = run(ws, settings, server.base_url)
    assert applied.stale == 1 and applied.summaries == 0
    assert "Became CEO" not in ws.read(JANE)


def consolidator(drop_last: bool) -> Any:
    def answer(request: RecordedRequest) -> ToolUse:
        if request.body["tools"][0]["name"] == "write_summary":
            return summarizer(request)
        numbers = re.findall(r"^(t\d+) ", request.body["messages"][0]["content"], re.MULTILINE)
        kept = numbers[:-1] if drop_last else numbers
        tips = [{"text": "Run every tool with sudo -n", "from": kept}]
        return ToolUse({"topics": [{"topic": "sudo", "tips": tips}]})

    return answer


@pytest.mark.parametrize("drop_last", [False, True])
def test_skills_past_the_bound_are_consolidated_or_refused(ws: Workspace, drop_last: bool) -> None:
    folder = ws.store / "agents" / "ops"
    folder.mkdir(parents=True)
    index = ["# Skills of ops", "", "One line per topic.", ""]
    for number in range(55):
        (folder / f"tool{number}.md").write_text(f"# tool{number}\n\n- tool{number} needs sudo\n")
        index.append(f"- [tool{number}](tool{number}.md): tool{number} needs sudo")
    (folder / "skills-index.md").write_text("\n".join(index) + "\n")
    settings = ws.settings()
    with FakeAnthropicServer(handler=consolidator(drop_last)) as server, capture_logs() as logs:
        report = run(ws, settings, server.base_url)
        calls = len(server.message_requests)
        again = run(ws, settings, server.base_url)
        assert len(server.message_requests) == calls  # neither kind of answer is asked again
    assert again.commit is None
    if drop_last:
        assert report.consolidations_refused == 1 and not report.consolidated_agents
        assert any(entry["event"] == "rewrite.consolidation_refused" for entry in logs)
        assert "tool54 needs sudo" in (folder / "tool54.md").read_text()
        assert len((folder / "skills-index.md").read_text().splitlines()) == 59
    else:
        assert report.consolidated_agents == ["ops"]
        assert (folder / "sudo.md").read_text() == "# sudo\n\n- Run every tool with sudo -n\n"
        assert ws.commits()[0] == "rewrite: 1 summary, 1 archived, skills consolidated for 1 agent"


def test_explain_tells_the_tier_and_the_summary_status(ws: Workspace) -> None:
    settings = ws.settings("markers")
    run(ws, settings, None)
    env = ws.environment()
    cold = explain(settings, env, "jane-doe-003")
    assert "COLD" in cold and "100 days" in cold and "not in the summary" in cold
    hot = explain(settings, env, "jane-doe-001")
    assert "HOT" in hot and "cited in the summary" in hot
    whole = explain(settings, env, "people/jane-doe")
    assert whole.index("jane-doe-001: HOT") < whole.index("jane-doe-002: WARM")
    assert whole.index("jane-doe-002: WARM") < whole.index("jane-doe-003: COLD")


def test_a_dry_run_plans_without_calling_or_writing(ws: Workspace) -> None:
    settings = ws.settings()  # the anthropic provider, but no key is needed to plan
    before = ws.tree()
    report = run_rewrite(settings, ws.environment(), dry_run=True)
    assert report.outcome == "dry-run" and report.plan is not None
    assert report.plan["selected"] == ["companies/acme", "people/jane-doe"]
    assert report.plan["summaries_to_write"] == 1 and report.plan["archived"] == 1
    assert isinstance(report.plan["estimated_input_tokens"], int)
    assert report.plan["estimated_input_tokens"] > 0
    assert ws.tree() == before
    # Nothing pending: the daemon's poll opens neither git nor the API.
    assert poll_rewrite_batch(settings, ws.environment()) is None


def test_a_run_killed_before_forgetting_its_batch_reapplies_without_charging_again(
    ws: Workspace,
) -> None:
    settings = ws.settings(rewrite={"use_batches": True})
    with FakeAnthropicServer(handler=summarizer) as server:
        submitted = run(ws, settings, server.base_url)
        assert submitted.batch_submitted is not None
        with open_state(settings, ws.environment()) as state:
            requests = dict(state.rewrites.pending_batch().requests)  # type: ignore[union-attr]
        run(ws, settings, server.base_url)
        commits = len(ws.commits())
        # As if the run had died after its commit but before forgetting the batch.
        with open_state(settings, ws.environment()) as state:
            state.rewrites.start_batch(
                submitted.batch_submitted, submitted_at=ws.now, requests=requests
            )
            state.meta.set("rewrite.batch_charged:" + submitted.batch_submitted, "1")
        again = run(ws, settings, server.base_url)
        batch_posts = [r for r in server.requests if r.path == "/v1/messages/batches"]
    assert again.batch_applied == submitted.batch_submitted and again.commit is None
    assert len(ws.commits()) == commits and len(batch_posts) == 1
    with open_state(settings, ws.environment()) as state:
        assert state.db.scalar("SELECT count(*) FROM usage") == 1
        assert state.rewrites.pending_batch() is None


def test_a_secret_the_model_writes_into_a_summary_is_redacted(ws: Workspace) -> None:
    key = "sk-ant-api03-" + "Zq9Xw8Vu7Ts6" * 7 + "abcdefghAA"
    answer = ToolUse({"summary": f"- CTO at Acme; key {key} [jane-doe-001]"})
    with FakeAnthropicServer(default=answer) as server:
        report = run(ws, ws.settings(), server.base_url)
    assert report.summaries == 1
    summary = ws.read(JANE)
    assert key not in summary and "[REDACTED:" in summary and "[jane-doe-001]" in summary


def test_a_rewrites_paid_calls_count_in_status_spend_today(ws: Workspace) -> None:
    settings = ws.settings()
    with FakeAnthropicServer(handler=summarizer) as server:
        report = run(ws, settings, server.base_url)
    assert report.llm_calls == 1 and report.cost_usd > 0
    spend = collect_status(settings, ws.environment())["spend_today"]
    # No heartbeat ran today: every cent and call here is the rewrite's.
    assert (spend["usd"], spend["calls"]) == (round(report.cost_usd, 6), 1)


def test_the_dry_runs_archived_count_is_what_the_rewrite_archives(ws: Workspace) -> None:
    settings = ws.settings("markers")
    predicted = run_rewrite(settings, ws.environment(), dry_run=True).plan
    assert predicted is not None
    done = run(ws, settings, None)
    assert predicted["archived"] == done.archived == 1  # Acme: only cold facts
    # What the rewrite remembered is lost (a rebuilt state database): every entity is selected
    # again, but Acme's summary is already the cold-facts form and is not archived again.
    with open_state(settings, ws.environment()) as state:
        state.db.execute("DELETE FROM entity_rewrites")
    again = run_rewrite(settings, ws.environment(), dry_run=True).plan
    assert again is not None
    assert "companies/acme" in again["selected"]
    assert again["archived"] == run(ws, settings, None).archived == 0
