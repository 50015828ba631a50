"""A heartbeat's extraction request, as the fake Anthropic server receives it through the real
SDK: a filed tacit rule the user restates is shown, a known entity only inside a path is not,
and a look-alike name is marked as another entity."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.harness import Workspace, turn
from tests.support.marker_model import marker_model, user_text


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def test_the_second_heartbeat_shows_the_filed_rule_and_only_entities_named_in_prose(
    ws: Workspace,
) -> None:
    memory = ws.store / "MEMORY.md"
    memory.write_text(memory.read_text() + "\n- Never takes meetings before 10:00\n")
    ws.git("commit", "-qam", "A person files a rule by hand")
    ws.write_log(
        "a.jsonl",
        [
            turn("user", "remember: person Jane Doe: Works at Initech", "2026-03-01T10:01:00Z"),
            turn("user", "remember: person Dev Patel: Runs the backups", "2026-03-01T10:02:00Z"),
        ],
    )
    with FakeAnthropicServer(handler=marker_model) as server:
        ws.heartbeat(ws.settings(), server.base_url)
        ws.write_log(
            "b.jsonl",
            [
                turn(
                    "user",
                    "No meetings before 10:00 for me. Jane Doerr mounts /dev/sda1 tonight.",
                    "2026-03-02T10:00:00Z",
                )
            ],
        )
        ws.heartbeat(ws.settings(), server.base_url)
        second = user_text(server.message_requests[1])
    lines = second.splitlines()
    assert "- Never takes meetings before 10:00" in lines
    assert (
        "people/jane-doe: Jane Doe, person — not the same person as 'Jane Doerr' in this "
        "excerpt, unless the excerpt says so"
    ) in lines
    assert "people/dev-patel" not in second
