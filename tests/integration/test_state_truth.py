"""The store is the truth, the state database a cache of it (docs/store-format.md, The store is the
truth): a state database that is
deleted, truncated, garbage, another store's, behind or ahead of the store is rebuilt from the
store's host record, and nothing is lost, filed twice, paid twice or counted twice.

Each test runs heartbeats through the real SDK against the fake server and compares the memories
with those of an uninterrupted run of the same transcripts.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn

from memoryd.errors import EXIT_OK
from memoryd.jobs.environment import open_state
from memoryd.settings import Settings

JANE = "life/areas/people/jane-doe"
RECORD = ".memoryd/hosts/localhost.json"

_FENCE = re.compile(r"<<<(MEMORYD-[0-9A-F]+) BEGIN>>>\n(.*)\n<<<\1 END>>>", re.DOTALL)
_REMEMBER = re.compile(r"remember: (\w+) ([^:]+): (.+)$", re.MULTILINE)
_PENDING = re.compile(r"pending: ([^:]+): (.+)$", re.MULTILINE)
_USES = re.compile(r"uses ([a-z0-9-]+-\d{3})")


def transcript(request: RecordedRequest) -> str:
    """The conversation text a request carries, without its context."""
    content = request.body["messages"][0]["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    match = _FENCE.search(text)
    assert match is not None
    return match.group(2)


def model(request: RecordedRequest) -> ToolUse:
    """Files `remember:` lines as significant facts, `pending:` lines as facts about a person
    who does not qualify yet, and reports `uses <id>` as an access."""
    text = transcript(request)
    facts: list[dict[str, Any]] = []
    entities: list[dict[str, Any]] = []
    for kind, name, fact in _REMEMBER.findall(text):
        facts.append({"entity": {"name": name, "kind": kind}, "fact": fact, "category": "status"})
        entities.append({"name": name, "kind": kind, "significant": True})
    for name, fact in _PENDING.findall(text):
        facts.append(
            {"entity": {"name": name, "kind": "person"}, "fact": fact, "category": "context"}
        )
    answer = {"facts": facts, "entities": entities, "accessed": _USES.findall(text)}
    return ToolUse(answer)


DAY_ONE = [
    turn("user", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z"),
    turn("user", "pending: Bob Marsh: Runs the bakery on Elm St", "2026-03-01T09:05:00Z"),
]
DAY_TWO = [
    turn("user", "remember: person Jane Doe: Moved to Lisbon", "2026-03-02T09:00:00Z"),
    turn("user", "As Jane said, uses jane-doe-001 again", "2026-03-02T09:10:00Z"),
]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(handler=model) as running:
        yield running


def workspace(root: Path) -> Workspace:
    ws = Workspace(root)
    ws.init()
    return ws


def memories(ws: Workspace) -> dict[str, str]:
    """The workspace's memories, its own folder's path (in facts' provenance) made neutral."""
    root = str(ws.root)
    return {path: text.replace(root, "<root>") for path, text in ws.memories().items()}


def run(ws: Workspace, server: FakeAnthropicServer) -> int:
    """One heartbeat; return how many model requests it made."""
    before = len(server.message_requests)
    report = ws.heartbeat(ws.settings(), server.base_url)
    assert report.exit_code == EXIT_OK, report.stop_reason
    return len(server.message_requests) - before


def reference(tmp_path: Path) -> dict[str, str]:
    """The memories of an uninterrupted run: day one, then day two, a heartbeat each."""
    ws = workspace(tmp_path / "reference")
    with FakeAnthropicServer(handler=model) as server:
        ws.write_log("a.jsonl", DAY_ONE)
        run(ws, server)
        ws.write_log("a.jsonl", DAY_TWO, append=True)
        run(ws, server)
    return memories(ws)


def state_db(ws: Workspace) -> Path:
    return ws.root / "state" / "state.db"


def delete_state(ws: Workspace) -> None:
    shutil.rmtree(ws.root / "state")


def truncate_state(ws: Workspace) -> None:
    state_db(ws).write_bytes(b"")
    for suffix in ("-wal", "-shm"):
        state_db(ws).with_name("state.db" + suffix).unlink(missing_ok=True)


def garbage_state(ws: Workspace) -> None:
    for suffix in ("-wal", "-shm"):
        state_db(ws).with_name("state.db" + suffix).unlink(missing_ok=True)
    state_db(ws).write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)


@pytest.mark.parametrize(
    "lose", [delete_state, truncate_state, garbage_state], ids=["deleted", "truncated", "garbage"]
)
def test_a_lost_state_database_is_rebuilt_from_the_store_and_nothing_is_paid_twice(
    tmp_path: Path, server: FakeAnthropicServer, lose: Callable[[Workspace], None]
) -> None:
    expected = reference(tmp_path)
    ws = workspace(tmp_path / "ws")
    ws.write_log("a.jsonl", DAY_ONE)
    assert run(ws, server) == 1
    lose(ws)
    ws.write_log("a.jsonl", DAY_TWO, append=True)

    with capture_logs() as logs:
        requests = run(ws, server)

    assert requests == 1  # day two only: day one is not read, not sent, not paid again
    assert memories(ws) == expected
    [jane_first, _] = ws.facts(JANE)
    assert jane_first["accessCount"] == 1
    rebuilt = [e for e in logs if e["event"] == "state.rebuilt"]
    assert [e["reason"] for e in rebuilt] == ["missing"]
    assert rebuilt[0]["pending_facts"] == 1
    # The pending fact about Bob survived in the store and is back in the database.
    with open_state(ws.settings(), ws.environment()) as state:
        assert [row.entity_name for row in state.pending.all()] == ["Bob Marsh"]
    # And again: in step, nothing read, nothing sent, nothing committed.
    commits = ws.commits()
    assert run(ws, server) == 0
    assert ws.commits() == commits


def test_garbage_in_the_state_file_is_moved_aside_and_logged(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    ws = workspace(tmp_path / "ws")
    ws.write_log("a.jsonl", DAY_ONE)
    run(ws, server)
    garbage_state(ws)

    with capture_logs() as logs:
        run(ws, server)

    [discarded] = [e for e in logs if e["event"] == "state.discarded"]
    aside = Path(discarded["moved_to"])
    assert aside.name.startswith("state.db.corrupt-")
    assert aside.read_bytes().startswith(b"SQLite format 3\x00\x00\x01")


def test_a_state_database_restored_from_an_older_backup_is_brought_up_to_the_store(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    expected = reference(tmp_path)
    ws = workspace(tmp_path / "ws")
    ws.write_log("a.jsonl", DAY_ONE)
    run(ws, server)
    backup = tmp_path / "state-backup"
    shutil.copytree(ws.root / "state", backup)
    ws.write_log("a.jsonl", DAY_TWO, append=True)
    run(ws, server)
    shutil.rmtree(ws.root / "state")
    shutil.copytree(backup, ws.root / "state")  # behind the store by one heartbeat

    with capture_logs() as logs:
        requests = run(ws, server)

    assert requests == 0  # day two was consumed by the store; it is not read again
    assert memories(ws) == expected
    assert [e["reason"] for e in logs if e["event"] == "state.rebuilt"] == ["behind"]
    assert [f["accessCount"] for f in ws.facts(JANE)] == [1, 0]


def test_a_store_restored_from_an_older_backup_refiles_what_it_lacks_without_paying_again(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    expected = reference(tmp_path)
    ws = workspace(tmp_path / "ws")
    ws.write_log("a.jsonl", DAY_ONE)
    run(ws, server)
    backup = tmp_path / "store-backup"
    shutil.copytree(ws.store, backup, symlinks=True)
    ws.write_log("a.jsonl", DAY_TWO, append=True)
    run(ws, server)
    shutil.rmtree(ws.store)
    shutil.copytree(backup, ws.store, symlinks=True)  # the store lost its last heartbeat

    with capture_logs() as logs:
        requests = run(ws, server)

    assert requests == 0  # day two's answer is still in the journal: filed again, not paid
    assert memories(ws) == expected
    [rebuilt] = [e for e in logs if e["event"] == "state.rebuilt"]
    assert rebuilt["reason"] == "ahead"
    assert rebuilt["chunks_reopened"] == 1
    assert [f["accessCount"] for f in ws.facts(JANE)] == [1, 0]


def test_a_state_directory_of_another_store_leaks_nothing_into_this_one(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    first = workspace(tmp_path / "first")
    first.write_log("a.jsonl", DAY_ONE)
    run(first, server)  # Bob Marsh's fact is pending in first's state
    second = workspace(tmp_path / "second")
    second.write_log(
        "b.jsonl",
        [turn("user", "remember: person Bob Marsh: Opened a second shop", "2026-03-05T10:00:00Z")],
    )

    with capture_logs() as logs:
        shared = second.settings(state={"path": str(first.root / "state")})
        report = second.heartbeat(shared, server.base_url)

    assert report.exit_code == EXIT_OK
    bob = second.facts("life/areas/people/bob-marsh")
    assert [f["fact"] for f in bob] == ["Opened a second shop"]  # not first's pending fact
    assert [e["reason"] for e in logs if e["event"] == "state.rebuilt"] == ["foreign"]
    assert "Elm St" not in json.dumps(second.memories())


def test_a_state_database_from_before_the_store_kept_records_is_adopted(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    ws = workspace(tmp_path / "ws")
    ws.write_log("a.jsonl", DAY_ONE)
    run(ws, server)
    # As an older memoryd left them: no record in the store, no binding in the database.
    (ws.store / RECORD).unlink()
    ws.git("commit", "-qam", "an older memoryd's store")
    settings: Settings = ws.settings()
    with open_state(settings, ws.environment()) as state:
        for key in ("store.binding", "store.generation"):
            state.meta.delete(key)

    with capture_logs() as logs:
        requests = run(ws, server)

    assert requests == 0
    assert not [e for e in logs if e["event"] == "state.rebuilt"]
    assert [e["event"] for e in logs if e["event"] == "state.adopted"] == ["state.adopted"]
    record = json.loads(ws.read(RECORD))
    assert [entry["entity_name"] for entry in record["pending"]] == ["Bob Marsh"]


class FailsOnce:
    """The module's model, but the chunk naming `trigger` fails once: both its first answer and
    the corrective retry are invalid."""

    def __init__(self, trigger: str) -> None:
        self.trigger = trigger
        self.invalid_left = 2

    def __call__(self, request: RecordedRequest) -> ToolUse:
        if self.invalid_left and self.trigger in transcript(request):
            self.invalid_left -= 1
            return ToolUse({"facts": [{"fact": "no entity"}]})
        return model(request)


@pytest.mark.parametrize("change", ["state deleted", "time zone changed"])
def test_what_was_filed_beyond_a_held_back_cursor_is_never_filed_or_counted_twice(
    tmp_path: Path, change: str
) -> None:
    ws = workspace(tmp_path / "ws")
    # One file: day one files a fact and uses it; day two fails once, so the file's cursor is
    # held back at its start while day one is committed.
    ws.write_log(
        "a.jsonl",
        [
            *DAY_ONE,
            turn("user", "Jane again, uses jane-doe-001", "2026-03-01T22:30:00Z"),
            turn("user", "remember: person Jane Doe: Moved to Lisbon", "2026-03-02T09:00:00Z"),
        ],
    )
    handler = FailsOnce("Lisbon")
    settings = ws.settings()
    with FakeAnthropicServer(handler=handler) as server:
        first = ws.heartbeat(settings, server.base_url)
        assert first.chunks_failed == 1
        assert [f["accessCount"] for f in ws.facts(JANE)] == [1]
        if change == "state deleted":
            delete_state(ws)
        else:  # day one's last turn now falls on day two: the chunks are cut differently
            settings = ws.settings(schedule={"timezone": "Asia/Tokyo"})
        before = len(server.message_requests)
        second = ws.heartbeat(settings, server.base_url)
        sent = [transcript(r) for r in server.message_requests[before:]]

    assert second.exit_code == EXIT_OK
    assert len(sent) == 1
    assert "Lisbon" in sent[0]
    assert "Acme" not in sent[0]
    assert "uses jane-doe-001" not in sent[0]
    facts = ws.facts(JANE)
    assert [f["fact"] for f in facts] == ["Joined Acme as CTO", "Moved to Lisbon"]
    assert facts[0]["accessCount"] == 1
    notes = "".join(path.read_text() for path in sorted((ws.store / "memory").glob("2*.md")))
    assert notes.count("Bob Marsh") == 1  # day one's pending note is not written twice
    # The cursor advanced past everything: nothing is held back or remembered ahead any more.
    assert json.loads(ws.read(RECORD))["ahead"] == {}


def test_a_new_host_name_keeps_the_state_and_records_under_the_new_name(
    tmp_path: Path, server: FakeAnthropicServer
) -> None:
    ws = workspace(tmp_path / "ws")
    ws.write_log("a.jsonl", DAY_ONE)
    run(ws, server)
    ws.write_log("a.jsonl", DAY_TWO, append=True)
    renamed = ws.settings(state={"path": str(ws.root / "state"), "host": "vps-1"})

    with capture_logs() as logs:
        before = len(server.message_requests)
        report = ws.heartbeat(renamed, server.base_url)

    assert report.exit_code == EXIT_OK
    assert len(server.message_requests) - before == 1  # day two only; day one is not resent
    assert [e["event"] for e in logs if e["event"].startswith("state.")] == ["state.host_renamed"]
    record = json.loads(ws.read(".memoryd/hosts/vps-1.json"))
    assert [entry["entity_name"] for entry in record["pending"]] == ["Bob Marsh"]
