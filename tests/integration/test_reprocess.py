"""`memoryd reprocess`: history read again by the following heartbeats, never filed twice.

Everything runs as the operator runs it: `memoryd` subprocesses over a real git store, the state
database on disk and the fake Anthropic server through the real SDK, answering as a model that
files each `remember:` line (`tests.support.marker_model`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

pytestmark = pytest.mark.slow

DAYS = [
    ("2026-03-01", "remember: person Jane Doe: Works at Initech"),
    ("2026-03-02", "remember: company Acme: Signed the renewal"),
    ("2026-03-03", "remember: person Jane Doe: Works at Acme replaces jane-doe-001"),
]


def model(request: RecordedRequest) -> ToolUse:
    from tests.support.marker_model import marker_model

    return marker_model(request)


def prepare(root: Path, base_url: str) -> tuple[Workspace, Path]:
    workspace = Workspace(root)
    workspace.init()
    workspace.write_log("a.jsonl", [turn("user", text, f"{day}T10:00:00Z") for day, text in DAYS])
    config = root / "memoryd.toml"
    llm = anthropic_llm(base_url, "concurrency = 1")
    text = ops_config(llm=llm, store=workspace.store, state=root / "state", logs=workspace.logs)
    config.write_text(text, encoding="utf-8")
    return workspace, config


def environment(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def command(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "memoryd", "--config", str(config), "--log-format", "json", *args]


def memoryd(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(config, *args),
        env=environment(config.parent),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def events(stderr: str) -> list[dict[str, Any]]:
    found = []
    for line in stderr.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def facts(workspace: Workspace) -> list[tuple[str, str, str, str | None]]:
    """Every fact of the store: id, text, status and what superseded it."""
    found = []
    for path in sorted(workspace.store.rglob("items.json")):
        for fact in json.loads(path.read_text(encoding="utf-8")):
            found.append((fact["id"], fact["fact"], fact["status"], fact["supersededBy"]))
    return found


def requests(workspace: Workspace) -> list[dict[str, Any]]:
    folder = workspace.store / ".memoryd/reprocess"
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def heartbeat_ok(config: Path) -> None:
    done = memoryd(config, "heartbeat")
    assert done.returncode == 0, done.stderr


def reprocess(config: Path, *args: str) -> str:
    """Record a reprocess request; return its id."""
    done = memoryd(config, "reprocess", *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("reprocess "), done.stdout
    return done.stdout.split()[1]


def test_reprocessing_an_agent_twice_files_no_fact_twice(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        heartbeat_ok(config)
        assert len(server.message_requests) == len(DAYS)
        first = facts(workspace)
        assert len(first) == 3  # two about Jane Doe (one superseded), one about Acme
        notes = {p: t for p, t in workspace.memories().items() if p.startswith("memory/")}

        request_id = reprocess(config, "--agent", "ops")
        [recorded] = requests(workspace)
        assert recorded["state"] == "pending"
        assert f"Memoryd-Reprocess: {request_id}" in workspace.git("log", "-1", "--format=%B")

        heartbeat_ok(config)
        # Every day read again and asked again, with the current model: a new call each.
        assert len(server.message_requests) == 2 * len(DAYS)
        assert facts(workspace) == first
        [recorded] = requests(workspace)
        assert recorded["state"] == "done"
        assert f"Memoryd-Reprocess: {request_id}" in workspace.git("log", "-1", "--format=%B")
        # The daily notes do not list the same lines twice either.
        assert {p: t for p, t in workspace.memories().items() if p.startswith("memory/")} == notes

        heartbeat_ok(config)  # a request done is never read again
        assert len(server.message_requests) == 2 * len(DAYS)

        reprocess(config, "--agent", "ops")
        heartbeat_ok(config)
        assert len(server.message_requests) == 3 * len(DAYS)
        assert facts(workspace) == first
        assert [r["state"] for r in requests(workspace)] == ["done", "done"]
    assert workspace.git("status", "--porcelain") == ""


def test_a_request_done_before_the_state_is_lost_is_not_run_again(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        heartbeat_ok(config)
        first = facts(workspace)
        reprocess(config)
        heartbeat_ok(config)
        paid = len(server.message_requests)
        assert paid == 2 * len(DAYS)
        shutil.rmtree(tmp_path / "state")  # the state database and its journal are gone

        heartbeat_ok(config)  # rebuilt from the store, which says the request is done
        assert len(server.message_requests) == paid
        assert facts(workspace) == first


def test_a_request_pending_when_the_state_is_lost_is_read_once(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        heartbeat_ok(config)
        first = facts(workspace)
        reprocess(config, "--agent", "ops")
        shutil.rmtree(tmp_path / "state")

        heartbeat_ok(config)
        assert len(server.message_requests) == 2 * len(DAYS)
        assert facts(workspace) == first
        assert [r["state"] for r in requests(workspace)] == ["done"]
        heartbeat_ok(config)
        assert len(server.message_requests) == 2 * len(DAYS)


def test_a_reprocess_killed_midway_is_finished_by_the_next_heartbeat(tmp_path: Path) -> None:
    held = [0]

    def slow_after_one(request: RecordedRequest) -> ToolUse:
        answer = model(request)
        held[0] += 1
        # The first re-read chunk is answered at once; the next one is held until the kill.
        if held[0] > len(DAYS) + 1:
            return ToolUse(answer.input, delay_seconds=30)
        return answer

    with FakeAnthropicServer(handler=slow_after_one) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        heartbeat_ok(config)
        first = facts(workspace)
        head = workspace.git("rev-parse", "HEAD").strip()
        reprocess(config, "--agent", "ops")
        process = subprocess.Popen(
            command(config, "heartbeat"),
            env=environment(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        end = time.monotonic() + 60
        while held[0] < len(DAYS) + 2:
            assert time.monotonic() < end, "the heartbeat never asked the second chunk"
            time.sleep(0.02)
        process.kill()
        process.communicate()
        assert process.returncode == -signal.SIGKILL
        assert [r["state"] for r in requests(workspace)] == ["pending"]
        assert workspace.git("rev-list", "--count", f"{head}..HEAD").strip() == "1"

    with FakeAnthropicServer(handler=model) as server:
        text = config.read_text(encoding="utf-8")
        old_url = text.split('base_url = "')[1].split('"')[0]
        config.write_text(text.replace(old_url, server.base_url), encoding="utf-8")
        heartbeat_ok(config)
        # The answer that arrived before the kill is reused from the journal.
        assert len(server.message_requests) == len(DAYS) - 1
    assert facts(workspace) == first
    assert [r["state"] for r in requests(workspace)] == ["done"]
    assert workspace.git("status", "--porcelain") == ""


def test_the_dry_run_prices_the_whole_re_read_and_records_nothing(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        heartbeat_ok(config)
        head = workspace.git("rev-parse", "HEAD").strip()
        done = memoryd(config, "reprocess", "--dry-run")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["chunks"] == len(DAYS)
        assert report["estimated_calls"] >= 1
        assert report["estimated_input_tokens"] > 0
        assert report["estimated_cost_usd"] > 0
        assert report["model"]
        assert report["price_usd_per_million_tokens"]["input"] > 0
        assert report["by_agent"] == {"ops": len(DAYS)}
        assert (report["first_day"], report["last_day"]) == ("2026-03-01", "2026-03-03")

        one_day = memoryd(config, "reprocess", "--dry-run", "--since", "2026-03-02")
        assert json.loads(one_day.stdout)["chunks"] == 2
        window = memoryd(
            config, "reprocess", "--dry-run", "--since", "2026-03-02", "--until", "2026-03-02"
        )
        assert json.loads(window.stdout)["chunks"] == 1
        source = memoryd(
            config, "reprocess", "--dry-run", "--agent", "ops", "--source", str(workspace.logs)
        )
        assert json.loads(source.stdout)["chunks"] == len(DAYS)
        assert len(server.message_requests) == len(DAYS)  # a dry run asks no model
    assert workspace.git("rev-parse", "HEAD").strip() == head
    assert requests(workspace) == []


def test_the_days_chosen_are_the_days_read_again(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        heartbeat_ok(config)
        first = facts(workspace)
        reprocess(config, "--since", "2026-03-02", "--until", "2026-03-02")
        heartbeat_ok(config)
        assert len(server.message_requests) == len(DAYS) + 1
        assert "Signed the renewal" in str(server.message_requests[-1].body)
    assert facts(workspace) == first


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--agent", "nobody"), "no agent 'nobody'"),
        (("--source", "/nowhere"), "no source '/nowhere'"),
        (("--since", "March 2"), "is not a date"),
        (("--since", "2026-03-03", "--until", "2026-03-01"), "is before --since"),
    ],
)
def test_bad_input_is_a_usage_error_that_says_why(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    workspace, config = prepare(tmp_path, "http://127.0.0.1:9")
    done = memoryd(config, "reprocess", *args)
    assert done.returncode == 2
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    assert any(e.get("event") == "command.failed" for e in events(done.stderr))
    assert requests(workspace) == []


def test_status_shows_a_pending_request(tmp_path: Path) -> None:
    _, config = prepare(tmp_path, "http://127.0.0.1:9")
    request_id = reprocess(config, "--agent", "ops", "--since", "2026-03-02")
    text = memoryd(config, "status").stdout
    assert f"reprocess {request_id} (ops, days 2026-03-02..now)" in text
    assert "pending" in text
    report = json.loads(memoryd(config, "status", "--json").stdout)
    assert [r["id"] for r in report["reprocess"]] == [request_id]


def stronger_model(request: RecordedRequest) -> ToolUse:
    """A model that also reads what the markers provider cannot (a plain sentence), and gives a
    better answer for a fact already filed (superseding it the normal way)."""
    from tests.support.marker_model import transcript_of

    answer = model(request)
    facts_found: list[dict[str, Any]] = list(answer.input["facts"])
    text = transcript_of(request)
    for fact in facts_found:
        if fact["fact"] == "Works at Acme":
            fact.update(fact="Works at Acme as head of sales", supersedes=["jane-doe-002"])
    if "moved to Lisbon" in text:
        facts_found.append(
            {
                "entity": {"name": "Jane Doe", "kind": "person"},
                "fact": "Lives in Lisbon",
                "category": "status",
                "supersedes": [],
            }
        )
    return ToolUse({**answer.input, "facts": facts_found})


def test_history_filed_by_markers_is_read_again_by_a_model(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.init()
    # The markers provider files `remember:` lines only (no `replaces`).
    plain = [(day, text.split(" replaces ")[0]) for day, text in DAYS]
    rows = [turn("user", text, f"{day}T10:00:00Z") for day, text in plain]
    rows.insert(2, turn("user", "Jane Doe told me she moved to Lisbon.", "2026-03-02T11:00:00Z"))
    workspace.write_log("a.jsonl", rows)
    config = tmp_path / "memoryd.toml"
    store, state, logs = workspace.store, tmp_path / "state", workspace.logs
    markers = ops_config(llm='provider = "markers"', store=store, state=state, logs=logs)
    config.write_text(markers, encoding="utf-8")
    heartbeat_ok(config)
    by_markers = facts(workspace)
    assert [f[1] for f in by_markers] == ["Signed the renewal", "Works at Initech", "Works at Acme"]

    with FakeAnthropicServer(handler=stronger_model) as server:
        llm = anthropic_llm(server.base_url, "concurrency = 1")
        with_model = ops_config(llm=llm, store=store, state=state, logs=logs)
        config.write_text(with_model, encoding="utf-8")
        reprocess(config, "--agent", "ops")
        heartbeat_ok(config)
        assert len(server.message_requests) == len(DAYS)
    after = facts(workspace)
    assert set(by_markers) - set(after) == {
        ("jane-doe-002", "Works at Acme", "active", None)
    }  # only superseded, never removed
    jane = {f[1]: f for f in after if f[0].startswith("jane-doe-")}
    assert len(after) == len(by_markers) + 2  # the sentence and the better answer, once each
    better = jane["Works at Acme as head of sales"]
    assert better[2] == "active"
    assert jane["Works at Acme"][2:] == ("superseded", better[0])
    assert jane["Lives in Lisbon"][2] == "active"


def test_a_request_file_that_does_not_parse_is_reported_and_the_heartbeat_goes_on(
    tmp_path: Path,
) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        broken = workspace.store / ".memoryd/reprocess/0123456789ab.json"
        broken.parent.mkdir(parents=True)
        broken.write_text("{not json", encoding="utf-8")
        done = memoryd(config, "heartbeat")
        assert done.returncode == 0, done.stderr
        assert len(facts(workspace)) == 3  # the new history is filed as ever
        assert [e["path"] for e in events(done.stderr) if e["event"] == "reprocess.unreadable"]
        assert broken.read_text(encoding="utf-8") == "{not json"
        assert "0123456789ab: UNREADABLE" in memoryd(config, "status").stdout


def test_a_request_part_read_before_the_state_was_lost_goes_on_where_it_stopped(
    tmp_path: Path,
) -> None:
    with FakeAnthropicServer(handler=model) as server:
        workspace, config = prepare(tmp_path, server.base_url)
        heartbeat_ok(config)
        first = facts(workspace)
        request_id = reprocess(config, "--agent", "ops")
        # As a heartbeat stopped by its budget after the first day leaves it, committed.
        path = workspace.store / f".memoryd/reprocess/{request_id}.json"
        recorded = json.loads(path.read_text(encoding="utf-8"))
        recorded.update(state="reading", resume_from="2026-03-02T10:00:00+00:00")
        path.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        workspace.git("commit", "-qam", "reprocess: first day filed")
        shutil.rmtree(tmp_path / "state")

        heartbeat_ok(config)
        assert len(server.message_requests) == len(DAYS) + 2  # the two days left, not the first
        from tests.support.marker_model import transcript_of

        read = [transcript_of(r) for r in server.message_requests[-2:]]
        assert not any("Initech" in text for text in read), read
        assert any("Signed the renewal" in text for text in read), read
    assert facts(workspace) == first
    assert [r["state"] for r in requests(workspace)] == ["done"]
