"""The read queue and the remember queue: what they accept, and that a reader never fails."""

from __future__ import annotations

import json
import stat
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from memoryd.reading.accesses import (
    QUEUE_NAME,
    QueuedReads,
    claim_reads,
    queue_folder,
    record_reads,
)
from memoryd.reading.remember import InvalidMemoryError, queue_memory, remember_line

DAY = date(2026, 3, 10)


def test_reads_are_queued_group_writable_and_claimed_whole(tmp_path: Path) -> None:
    assert record_reads(tmp_path, [], agent="ops", day=DAY) == QueuedReads(0, queued=True)
    assert record_reads(tmp_path, ["a-001", "a-001", "b-001"], agent="ops", day=DAY).facts == 2
    folder = queue_folder(tmp_path)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o2770
    assert stat.S_IMODE((folder / QUEUE_NAME).stat().st_mode) == 0o660
    claimed = claim_reads(tmp_path)
    assert claimed.reads == (("a-001", "ops", DAY), ("b-001", "ops", DAY))
    assert not (folder / QUEUE_NAME).exists()
    record_reads(tmp_path, ["c-001"], agent="ops", day=DAY)
    again = claim_reads(tmp_path)  # the earlier claim was never released: read again
    assert sorted(read[0] for read in again.reads) == ["a-001", "b-001", "c-001"]


def test_a_queue_that_cannot_be_written_is_logged_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    with capture_logs() as logs:
        assert not record_reads(blocker, ["a-001"], agent="ops", day=DAY).queued
    assert logs[-1]["event"] == "reads.not_recorded"


def test_a_memory_becomes_a_marker_line_of_the_agents_transcript(tmp_path: Path) -> None:
    assert remember_line("Likes tea", entity=None, kind=None) == "note: Likes tea"
    assert (
        remember_line("Likes\ntea", entity="Jane: Doe", kind="person")
        == "remember: person Jane  Doe: Likes tea"
    )
    for text, entity, kind in (("  ", None, None), ("x", "Jane", "alien"), ("x", ":", "person")):
        with pytest.raises(InvalidMemoryError):
            remember_line(text, entity=entity, kind=kind)
    at = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
    path = queue_memory(tmp_path, agent="Ops Bot", text="Likes tea", entity=None, kind=None, at=at)
    assert path == tmp_path / "queue" / "remembered" / "ops-bot" / "2026-03-10.jsonl"
    row = json.loads(path.read_text())
    assert row == {
        "agent": "Ops Bot",
        "content": "note: Likes tea",
        "role": "assistant",
        "session_id": "remember-2026-03-10",
        "timestamp": "2026-03-10T09:30:00+00:00",
    }
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o2770
