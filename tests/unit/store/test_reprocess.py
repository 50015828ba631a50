"""Reprocess requests in the store (`memoryd.store.reprocess`): their file, what they select, how
they move on, and a file that does not parse."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from tests.unit.store.conftest import DirTransaction

from memoryd.errors import CorruptFileError
from memoryd.store.reprocess import (
    ReprocessRequest,
    active_requests,
    list_requests,
    parse_request,
    progressed,
    render_request,
    write_request,
)

REQUESTED = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def request(**changes: object) -> ReprocessRequest:
    fields: dict[str, object] = {"id": "0123456789ab", "host": "alpha", "requested": REQUESTED}
    fields.update(changes)
    return ReprocessRequest(**fields)  # type: ignore[arg-type]


def test_a_request_renders_to_the_same_bytes_and_parses_back() -> None:
    original = request(agent="ops", source="/logs", since=date(2026, 3, 1), until=date(2026, 3, 2))
    text = render_request(original)
    assert parse_request(text) == original
    assert render_request(parse_request(text)) == text
    assert text.endswith("}\n") and '"state": "pending"' in text


def test_it_selects_the_days_asked_written_before_it_was_made() -> None:
    chosen = request(since=date(2026, 3, 2), until=date(2026, 3, 3))
    at = datetime(2026, 3, 2, 10, tzinfo=UTC)
    assert chosen.selects(date(2026, 3, 2), at)
    assert not chosen.selects(date(2026, 3, 1), at)
    assert not chosen.selects(date(2026, 3, 4), at)
    assert not request().selects(date(2026, 12, 7), datetime(2026, 12, 7, tzinfo=UTC))


def test_it_covers_its_agent_and_source_only() -> None:
    assert request().covers("ops", "/logs")
    assert request(agent="ops").covers("ops", "/logs")
    assert not request(agent="ops").covers("dev", "/logs")
    assert not request(source="/other").covers("ops", "/logs")


def test_progress_resumes_after_what_was_filed_and_ends_done() -> None:
    resume = datetime(2026, 3, 2, 10, tzinfo=UTC)
    reading = progressed(request(), resume_from=resume, run_id="run-1")
    assert (reading.state, reading.resume_from) == ("reading", resume)
    assert not reading.selects(date(2026, 3, 1), datetime(2026, 3, 1, tzinfo=UTC))
    done = progressed(reading, resume_from=None, run_id="run-2")
    assert (done.state, done.finished, done.active) == ("done", "run-2", False)


def test_only_this_hosts_requests_not_done_are_active(tx: DirTransaction) -> None:
    write_request(tx, request(id="aaaaaaaaaaaa"))
    write_request(tx, request(id="bbbbbbbbbbbb", host="beta"))
    write_request(tx, request(id="cccccccccccc", state="done"))
    assert [r.id for r in list_requests(tx)] == ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"]
    assert [r.id for r in active_requests(tx, "alpha")] == ["aaaaaaaaaaaa"]


@pytest.mark.parametrize(
    "text",
    ["not json", "[]", '{"format": 1, "id": "0123456789ab", "state": "maybe"}'],
)
def test_a_file_that_does_not_parse_is_named_and_left_alone(
    tx: DirTransaction, store_root: Path, text: str
) -> None:
    path = store_root / ".memoryd/reprocess/0123456789ab.json"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CorruptFileError, match=r"0123456789ab\.json"):
        list_requests(tx)
    assert path.read_text(encoding="utf-8") == text
    assert tx.written == []
