"""New facts are visible at once: a heartbeat refreshes the summaries and gists of what it
touched, and the weekly rewrite keeps hot facts before warm ones whatever order the model uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn
from tests.support.rewrite import Planted, plant
from tests.support.rewrite_run import run

from memoryd.errors import EXIT_OK

JANE = "life/areas/people/jane-doe"
_FACT_LINE = re.compile(r"^\[([a-z0-9-]+-\d{3,})\] (.*) \([a-z]+, since [0-9-]+\)$", re.MULTILINE)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def test_a_heartbeat_writes_the_summary_and_the_gist_in_its_own_commit(ws: Workspace) -> None:
    ws.write_log(
        "a.jsonl",
        [
            turn("user", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-09T09:00:00Z"),
            turn("user", "remember: person Jane Doe: Lives in Lisbon", "2026-03-09T09:01:00Z"),
        ],
    )
    report = ws.heartbeat(ws.settings("markers"))
    assert report.exit_code == EXIT_OK
    assert ws.read(f"{JANE}/summary.md") == (
        "# Jane Doe\n\n## Recent\n\n"
        "- Joined Acme as CTO [jane-doe-001]\n- Lives in Lisbon [jane-doe-002]\n"
    )
    assert "— Jane Doe: Joined Acme as CTO" in ws.read("life/index.md")
    changed = ws.git("show", "--name-only", "--format=", "HEAD").split()
    assert {f"{JANE}/summary.md", f"{JANE}/items.json", "life/index.md"} <= set(changed)
    assert len(ws.commits()) == 2  # init, then the heartbeat: one commit with everything

    # A second heartbeat adding a fact refreshes the same summary, and nothing else is touched.
    ws.write_log(
        "a.jsonl",
        [turn("user", "remember: person Jane Doe: Speaks Portuguese", "2026-03-10T09:00:00Z")],
        append=True,
    )
    ws.heartbeat(ws.settings("markers"))
    assert "- Speaks Portuguese [jane-doe-003]" in ws.read(f"{JANE}/summary.md")


def _inverted(request: RecordedRequest, *, headings: bool) -> ToolUse:
    """A model that lists the warm facts before the hot ones."""
    text = request.body["messages"][0]["content"]
    hot_part, warm_part = text.split("Warm facts", 1) if "Warm facts" in text else (text, "")
    hot = [f"- {fact} [{fact_id}]" for fact_id, fact in _FACT_LINE.findall(hot_part)]
    warm = [f"- {fact} [{fact_id}]" for fact_id, fact in _FACT_LINE.findall(warm_part)]
    if headings:
        return ToolUse({"summary": "\n".join(["## Old", "", *warm, "", "## New", "", *hot])})
    return ToolUse({"summary": "\n".join(warm + hot)})


def _plant_jane(ws: Workspace) -> None:
    plant(
        ws.store,
        [
            Planted("Jane Doe", "Lives in Lisbon", age=15),
            Planted("Jane Doe", "Joined Acme as CTO", age=1),
        ],
        today=ws.now.date(),
    )


def test_the_rewrite_puts_hot_facts_first_when_the_model_inverts_them(ws: Workspace) -> None:
    _plant_jane(ws)
    with FakeAnthropicServer(handler=lambda r: _inverted(r, headings=False)) as server:
        report = run(ws, ws.settings(), server.base_url)
    assert report.outcome == "ok" and report.refused == 0
    assert "Warm facts" in server.message_requests[0].body["messages"][0]["content"]
    assert ws.read(f"{JANE}/summary.md") == (
        "# Jane Doe\n\n- Joined Acme as CTO [jane-doe-002]\n- Lives in Lisbon [jane-doe-001]\n"
    )


def test_an_inverted_summary_with_sections_is_refused_and_asked_again(ws: Workspace) -> None:
    _plant_jane(ws)
    before = ws.read(f"{JANE}/summary.md")
    with FakeAnthropicServer(handler=lambda r: _inverted(r, headings=True)) as server:
        report = run(ws, ws.settings(), server.base_url)
    assert len(server.message_requests) == 2  # asked again with the correction
    correction = server.message_requests[1].body["messages"][0]["content"]
    assert "hot facts go first" in correction
    assert report.refused == 1
    assert ws.read(f"{JANE}/summary.md") == before  # the previous summary stays
