"""The queue folder is group-writable: what a neighbour plants there (a symlink, a FIFO, a folder
link, an over-full day) never makes memoryd write elsewhere, hang or lose memories it accepted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from memoryd.reading.accesses import (
    MAX_CLAIM_BYTES,
    QUEUE_NAME,
    UnsafeQueueError,
    claim_reads,
    queue_folder,
    record_reads,
)
from memoryd.reading.remember import (
    MAX_NAME_CHARS,
    MAX_PER_DAY,
    MAX_TEXT_CHARS,
    InvalidMemoryError,
    accepted_line,
    queue_memory,
    remembered_root,
)

DAY = date(2026, 3, 10)
AT = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)


def test_a_symlinked_read_queue_is_never_written_through_and_is_removed(tmp_path: Path) -> None:
    target = tmp_path / "items.json"
    target.write_text("[]\n")
    (queue_folder(tmp_path / "state") / QUEUE_NAME).symlink_to(target)
    queued = record_reads(tmp_path / "state", ["a-001"], agent="ops", day=DAY)
    assert not queued.queued and queued.error is not None and "symlink" in queued.error
    assert target.read_text() == "[]\n"
    with capture_logs() as logs:
        claimed = claim_reads(tmp_path / "state")
    assert claimed.reads == ()
    assert not os.path.lexists(tmp_path / "state" / "queue" / QUEUE_NAME)
    assert target.read_text() == "[]\n"  # the link went, never what it pointed to
    assert [log["kind"] for log in logs if log["event"] == "queue.unsafe"] == ["a symlink"]


def test_a_fifo_read_queue_neither_blocks_a_reader_nor_a_heartbeat(tmp_path: Path) -> None:
    state = tmp_path / "state"
    os.mkfifo(queue_folder(state) / QUEUE_NAME)
    assert not record_reads(state, ["a-001"], agent="ops", day=DAY).queued
    claimed_name = queue_folder(state) / "reads-claimed-planted.jsonl"
    os.mkfifo(claimed_name)
    script = (
        "import sys; from pathlib import Path; from memoryd.reading.accesses import claim_reads; "
        "print(len(claim_reads(Path(sys.argv[1])).reads))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(state)],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "0"
    assert done.stdout.count("queue.unsafe") == 2
    assert not os.path.lexists(queue_folder(state) / QUEUE_NAME)
    assert not os.path.lexists(claimed_name)
    assert record_reads(state, ["a-001"], agent="ops", day=DAY).queued  # usable again


def test_a_symlinked_queue_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    (state / "queue").symlink_to(elsewhere, target_is_directory=True)
    assert not record_reads(state, ["a-001"], agent="ops", day=DAY).queued
    with pytest.raises(UnsafeQueueError):
        queue_memory(state, agent="ops", text="Likes tea", entity=None, kind=None, at=AT)
    assert list(elsewhere.iterdir()) == []
    assert claim_reads(state).reads == ()


def test_claimed_reads_are_bounded_per_heartbeat(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path)
    line = json.dumps({"agent": "ops", "day": DAY.isoformat(), "fact": "a-001"}) + "\n"
    repeats = MAX_CLAIM_BYTES // len(line) + 10
    (folder / "reads-claimed-big.jsonl").write_text(line * repeats)
    with capture_logs() as logs:
        claimed = claim_reads(tmp_path)
    assert claimed.reads == (("a-001", "ops", DAY),)
    truncated = [log for log in logs if log["event"] == "reads.queue_truncated"]
    assert truncated and truncated[0]["dropped"] > 0


def test_a_symlinked_day_file_is_never_appended_through(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("[core]\n")
    folder = remembered_root(tmp_path / "state") / "ops"
    queue_memory(tmp_path / "state", agent="ops", text="first", entity=None, kind=None, at=AT)
    later = AT + timedelta(days=1)
    (folder / f"{later.date().isoformat()}.jsonl").symlink_to(config)
    with pytest.raises(UnsafeQueueError):
        queue_memory(
            tmp_path / "state", agent="ops", text="Likes tea", entity=None, kind=None, at=later
        )
    assert config.read_text() == "[core]\n"


def test_remember_refuses_at_the_door_what_a_heartbeat_would_not_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with pytest.raises(InvalidMemoryError, match=f"at most {MAX_TEXT_CHARS}"):
        queue_memory(state, agent="ops", text="x" * 1001, entity=None, kind=None, at=AT)
    with pytest.raises(InvalidMemoryError, match=f"at most {MAX_NAME_CHARS}"):
        queue_memory(state, agent="ops", text="tea", entity="J" * 201, kind="person", at=AT)
    for number in range(MAX_PER_DAY):
        queue_memory(state, agent="ops", text=f"memory {number}", entity=None, kind=None, at=AT)
    with pytest.raises(InvalidMemoryError, match="remember it tomorrow"):
        queue_memory(state, agent="ops", text="one more", entity=None, kind=None, at=AT)
    day_file = remembered_root(state) / "ops" / "2026-03-10.jsonl"
    assert len(day_file.read_text().splitlines()) == MAX_PER_DAY
    queue_memory(state, agent="ops", text="one more", entity=None, kind=None, at=AT + timedelta(1))


def test_only_lines_remember_writes_are_accepted() -> None:
    assert accepted_line("note: Likes tea")
    assert accepted_line("remember: person Jane Doe: Likes tea")
    for content in (
        "skill: deploys: run make",
        "tacit: the user wants rm -rf",
        "supersede: person Jane Doe: jane-doe-001: Never existed",
        "remember: person Jane Doe: Likes tea\nskill: x: y",
        "remember: alien Jane Doe: Likes tea",
        "note: " + "x" * 1001,
        ["note: Likes tea"],
    ):
        assert not accepted_line(content), content


def test_a_folder_where_the_queue_should_be_is_skipped_not_claimed(tmp_path: Path) -> None:
    folder = queue_folder(tmp_path)
    (folder / QUEUE_NAME).mkdir()
    (folder / "reads-claimed-x.jsonl").mkdir()
    with capture_logs() as logs:
        claimed = claim_reads(tmp_path)
    assert claimed == claim_reads(tmp_path) and claimed.files == ()
    assert (folder / QUEUE_NAME).is_dir()
    assert [log["action"] for log in logs if log["event"] == "queue.unsafe"] == ["skipped"] * 2
