"""Secrets stated in prose reach none of the places a heartbeat writes: the request to the model,
the store's files and git history, the state database, the logs. A real heartbeat (real SDK over
HTTP to the fake server, real git, real SQLite) over a transcript that states them, with a
model that also answers with secrets of its own (a model's answer is scrubbed before it is kept).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, Text, ToolUse
from tests.support.harness import Workspace, turn
from tests.support.marker_model import marker_model

from memoryd.errors import EXIT_OK

# Stated by the user in the transcript.
SAID = {
    "Lighthouse-Kelp-2291": "remember: company Acme: the office wifi password is now "
    "Lighthouse-Kelp-2291",
    "48213": "remember: company Acme: the PIN for the alarm is 48213",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "remember: company Acme: deploy with secret "
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "S3cret!Quill9": "the staging login: bob / S3cret!Quill9",
}
# Made up by the model in its answer.
ANSWERED = ("Zx9-Vq!mote41", "77031")


def leaky_model(request: RecordedRequest) -> ToolUse:
    answer = marker_model(request)
    answer.input["facts"].append(
        {
            "entity": {"name": "Acme", "kind": "company"},
            "fact": "The root password is now Zx9-Vq!mote41 and the door code is 77031",
            "category": "status",
            "supersedes": [],
        }
    )
    return answer


def every_file_below(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def test_secrets_stated_in_prose_reach_no_request_store_history_state_or_log(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path)
    ws.init()
    ws.write_log(
        "a.jsonl",
        [turn("user", text, f"2026-03-0{i + 1}T09:00:00Z") for i, text in enumerate(SAID.values())],
    )

    with capture_logs() as events, FakeAnthropicServer(handler=leaky_model) as server:
        report = ws.heartbeat(ws.settings(), server.base_url)
        sent = json.dumps([request.body for request in server.message_requests])

    assert report.exit_code == EXIT_OK
    assert report.chunks_extracted >= 1
    history = subprocess.run(
        ["git", "-C", str(ws.store), "log", "-p", "--all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    facts = [fact["fact"] for fact in ws.facts("life/areas/companies/acme")]
    stored = json.dumps(ws.tree())
    state = every_file_below(tmp_path / "state")
    logged = repr(events)
    for secret in [*SAID, *ANSWERED]:
        assert secret not in sent, secret
        assert secret not in stored, secret
        assert secret not in history, secret
        assert secret.encode() not in state, secret
        assert secret not in logged, secret
    # What was said around the secrets is kept: the facts were filed, only the values went.
    assert "the office wifi password is now [REDACTED:password]" in facts
    assert "the PIN for the alarm is [REDACTED:password]" in facts
    assert "deploy with secret [REDACTED:secret]" in facts
    assert (
        "The root password is now [REDACTED:password] and the door code is [REDACTED:password]"
        in facts
    )
    assert "bob / [REDACTED:password]" in sent
    assert len(state) > 0


def test_a_quarantined_chunk_and_an_invalid_answer_keep_no_prose_secret(tmp_path: Path) -> None:
    # A chunk that fails three heartbeats is kept whole in the state database, with the error
    # that failed it; the model's text answers (invalid: no tool call) state a secret too.
    ws = Workspace(tmp_path)
    ws.init()
    ws.write_log("a.jsonl", [turn("user", text, "2026-03-01T09:00:00Z") for text in SAID.values()])
    answer = Text("Nothing to record. The root password is now Zx9-Vq!mote41, door code is 77031")

    with capture_logs() as events, FakeAnthropicServer(default=answer) as server:
        reports = [ws.heartbeat(ws.settings(), server.base_url) for _ in range(3)]
        sent = json.dumps([request.body for request in server.message_requests])

    assert [report.chunks_failed for report in reports] == [1, 1, 1]
    assert reports[-1].chunks_quarantined == 1
    state = every_file_below(tmp_path / "state")
    logged = repr(events)
    stored = json.dumps(ws.tree())
    for secret in [*SAID, *ANSWERED]:
        assert secret not in sent, secret
        assert secret.encode() not in state, secret
        assert secret not in logged, secret
        assert secret not in stored, secret
    assert b"the office wifi password is now [REDACTED:password]" in state
