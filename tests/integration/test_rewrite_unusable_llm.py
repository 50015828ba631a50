"""The weekly rewrite meeting a run-level LLM error: it stops asking (one request, not one per
entity), the template stands in as for an unreachable LLM, `llm.unusable` says what to fix, the
run ends `unusable` (exit 78), and a pending batch is kept rather than forgotten."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, credit_too_low, invalid_key
from tests.support.harness import Workspace
from tests.support.rewrite import Planted, plant
from tests.support.rewrite_run import run, summarizer

from memoryd.daemon.status import collect_status
from memoryd.errors import EXIT_CONFIG, EXIT_OK
from memoryd.jobs.environment import open_state


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    plant(
        workspace.store,
        [
            Planted("Jane Doe", "Joined Acme as CTO", age=1),
            Planted("Bob Roe", "Moved to Lisbon", age=2),
            Planted("Cy Dow", "Runs the Atlas project", age=3),
        ],
        today=workspace.now.date(),
    )
    return workspace


def test_a_refused_key_is_asked_once_and_the_template_writes_every_summary(
    ws: Workspace,
) -> None:
    settings = ws.settings()
    with FakeAnthropicServer(default=invalid_key()) as server, capture_logs() as logs:
        endpoint = server.base_url
        report = run(ws, settings, endpoint)
        assert len(server.message_requests) == 1  # not once per entity
    assert (report.outcome, report.exit_code) == ("unusable", EXIT_CONFIG)
    assert report.templated == 3
    assert report.template_reason == "llm unusable (authentication)"
    assert ws.commits()[0].endswith("(template: llm unusable (authentication))")
    (line,) = [entry for entry in logs if entry["event"] == "llm.unusable"]
    assert (line["kind"], line["endpoint"], line["message"]) == (
        "authentication",
        endpoint,
        "invalid x-api-key",
    )
    assert collect_status(settings, ws.environment())["llm_unusable"]["kind"] == "authentication"

    with FakeAnthropicServer(handler=summarizer) as server:
        later = run(ws, settings, server.base_url)
        assert len(server.message_requests) == 3  # the templated summaries are redone
    assert (later.outcome, later.exit_code) == ("ok", EXIT_OK)
    assert collect_status(settings, ws.environment())["llm_unusable"] is None


def test_a_pending_batch_is_kept_when_the_account_runs_dry(ws: Workspace) -> None:
    settings = ws.settings(rewrite={"use_batches": True})
    with FakeAnthropicServer(handler=summarizer) as server:
        submitted = run(ws, settings, server.base_url)
        assert submitted.batch_submitted is not None
        server.fail_next(credit_too_low())  # the next poll
        stuck = run(ws, settings, server.base_url, poll_only=True)
        assert (stuck.outcome, stuck.exit_code) == ("unusable", EXIT_CONFIG)
        assert stuck.batch_pending == submitted.batch_submitted
        with open_state(settings, ws.environment()) as state:
            pending = state.rewrites.pending_batch()
            assert pending is not None and pending.batch_id == submitted.batch_submitted
        applied = run(ws, settings, server.base_url)
        assert applied.batch_applied == submitted.batch_submitted
        assert applied.exit_code == EXIT_OK
