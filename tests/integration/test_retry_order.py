"""`memoryd retry` files an old conversation after newer ones without breaking chronology: an old
fact never supersedes, nor stays active beside, the newer fact that replaced it (issue: "Head
of Data" and "VP of Data" both active)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

from memoryd.jobs.environment import open_state

JANE = "life/areas/people/jane-doe"
INVALID = {"facts": [{"fact": "no entity"}]}
_LATER = re.compile(r"(jane-doe-\d{3}) \(true from [0-9-]+, after this excerpt\)")


class Model:
    """Answers the old conversation invalidly until `fixed`; then, as the prompt asks, names a
    known fact marked as later than the excerpt in `supersedes`."""

    def __init__(self) -> None:
        self.fixed = False

    def __call__(self, request: RecordedRequest) -> ToolUse:
        content = request.body["messages"][0]["content"]
        text = content if isinstance(content, str) else "".join(b["text"] for b in content)
        jane = {"name": "Jane Doe", "kind": "person"}
        if "VP of Data" in text.split("BEGIN>>>", 1)[-1]:
            fact = {"entity": jane, "fact": "Became VP of Data", "category": "status"}
            entities = [{**jane, "significant": True}]
            return ToolUse({"facts": [fact], "entities": entities})
        if not self.fixed:
            return ToolUse(INVALID)
        fact = {
            "entity": jane,
            "fact": "Became Head of Data",
            "category": "status",
            "supersedes": _LATER.findall(text),
        }
        return ToolUse({"facts": [fact]})


def test_a_requeued_old_chunk_is_filed_as_the_earlier_state_of_a_newer_fact(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    ws.write_log(
        "old.jsonl", [turn("user", "Jane Doe is Head of Data now", "2026-03-01T09:00:00Z")]
    )
    model = Model()
    with FakeAnthropicServer(handler=model) as server:
        for _ in range(3):  # the old conversation fails three heartbeats: quarantined
            ws.heartbeat(ws.settings(), server.base_url)
        ws.write_log(
            "new.jsonl", [turn("user", "Jane Doe was promoted: VP of Data", "2026-03-05T09:00:00Z")]
        )
        ws.heartbeat(ws.settings(), server.base_url)
        model.fixed = True
        with open_state(ws.settings(), ws.environment()) as state:
            assert state.failures.requeue_all(ws.now) == 1
        report = ws.heartbeat(ws.settings(), server.base_url)

    assert report.exit_code == 0
    facts = {f["fact"]: f for f in ws.facts(JANE)}
    vp, head = facts["Became VP of Data"], facts["Became Head of Data"]
    assert (vp["status"], vp["supersededBy"]) == ("active", None)
    assert (head["status"], head["supersededBy"]) == ("superseded", vp["id"])
    assert head["timestamp"] == "2026-03-01"
