"""The chunk journal and run history: what a killed heartbeat leaves for the next one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memoryd.llm.prices import Usage
from memoryd.state import JournalStateError, State, StateDB, StateError, StateValueError
from memoryd.state.schema import MIGRATIONS

from .conftest import at

PLAN = '{"file": "/t/a.jsonl", "range": [0, 4096], "digest": "d1"}'
ANSWER = '{"facts": [], "tacit": ["Prefers terse summaries"]}'
USAGE = Usage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=900)


def _answered(state: State, key: str, run_id: str = "run-1") -> None:
    state.journal.plan(key, run_id=run_id, plan_json=PLAN, at=at(0))
    state.journal.record_answer(key, answer_json=ANSWER, usage=USAGE, model="m", at=at(1))


def test_a_chunk_moves_through_the_four_states(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    planned = state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    assert planned.state == "planned"
    assert planned.answer_json is None

    answered = state.journal.record_answer(
        "k1", answer_json=ANSWER, usage=USAGE, model="claude-haiku-5-5", at=at(1)
    )
    assert answered.state == "answered"
    assert json.loads(answered.answer_json or "") == json.loads(ANSWER)
    assert answered.usage == USAGE
    assert answered.model == "claude-haiku-5-5"
    assert answered.answered_at == at(1)

    applied = state.journal.mark_applied("k1", run_id="run-1", at=at(2))
    assert applied.state == "applied"
    assert applied.applied_at == at(2)

    state.journal.mark_committed(["k1"], commit_sha="abc123", at=at(3))
    committed = state.journal.get("k1")
    assert committed is not None
    assert committed.state == "committed"
    assert committed.commit_sha == "abc123"
    assert committed.committed_at == at(3)


def test_planning_never_overwrites_an_answer(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.runs.start("run-2", "heartbeat", at(10))
    _answered(state, "k1")

    again = state.journal.plan("k1", run_id="run-2", plan_json=PLAN, at=at(10))

    assert again.state == "answered"
    assert again.run_id == "run-1"
    assert again.answer_json is not None
    found = state.journal.answered("k1")
    assert found is not None
    assert found.usage == USAGE


def test_a_chunk_only_planned_is_replanned_by_the_next_run(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.runs.start("run-2", "heartbeat", at(10))
    state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    record = state.journal.plan("k1", run_id="run-2", plan_json='{"v": 2}', at=at(10))
    assert (record.state, record.run_id, record.plan_json, record.planned_at) == (
        "planned",
        "run-2",
        '{"v":2}',
        at(10),
    )
    assert state.journal.answered("k1") is None
    assert state.journal.answered("unknown") is None


def test_a_committed_chunk_read_again_is_reported_committed(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.runs.start("run-2", "heartbeat", at(10))
    _answered(state, "k1")
    state.journal.mark_applied("k1", run_id="run-1", at=at(2))
    state.journal.mark_committed(["k1"], commit_sha=None, at=at(3))
    # Killed after the commit, before the cursors advanced: the chunk comes round again.
    assert state.journal.plan("k1", run_id="run-2", plan_json=PLAN, at=at(10)).state == (
        "committed"
    )


def test_out_of_order_moves_are_refused(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    with pytest.raises(JournalStateError, match="unknown to the journal"):
        state.journal.record_answer("nope", answer_json="{}", usage=USAGE, model="m", at=at(0))
    state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    with pytest.raises(JournalStateError, match="'planned'"):
        state.journal.mark_applied("k1", run_id="run-1", at=at(1))
    with pytest.raises(JournalStateError):
        state.journal.mark_committed(["k1"], commit_sha="x", at=at(1))
    state.journal.record_answer("k1", answer_json="{}", usage=USAGE, model="m", at=at(1))
    with pytest.raises(JournalStateError, match="'answered'"):
        state.journal.record_answer("k1", answer_json="{}", usage=USAGE, model="m", at=at(1))


def test_committing_is_all_or_nothing(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    _answered(state, "k1")
    state.journal.mark_applied("k1", run_id="run-1", at=at(2))
    _answered(state, "k2")  # never applied
    with pytest.raises(JournalStateError):
        state.journal.mark_committed(["k1", "k2"], commit_sha="abc", at=at(3))
    record = state.journal.get("k1")
    assert record is not None
    assert record.state == "applied"


def test_an_answer_that_is_not_json_is_refused(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    with pytest.raises(StateValueError):
        state.journal.record_answer("k1", answer_json="{", usage=USAGE, model="m", at=at(1))


def test_a_chunk_needs_a_started_run(state: State) -> None:
    with pytest.raises(StateError, match="FOREIGN KEY"):
        state.journal.plan("k1", run_id="never-started", plan_json=PLAN, at=at(0))


def test_answer_and_usage_are_recorded_together_or_not_at_all(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(0))
    with pytest.raises(StateValueError), state.transaction():
        state.journal.record_answer("k1", answer_json=ANSWER, usage=USAGE, model="m", at=at(1))
        state.usage.record(at=at(1), model="m", usage=USAGE, cost_usd=-1.0, job="heartbeat")
    assert state.journal.answered("k1") is None


def test_journalled_work_survives_close_and_reopen(state_path: Path) -> None:
    with State.open(state_path) as state:
        state.runs.start("run-1", "heartbeat", at(0))
        state.journal.plan("planned-only", run_id="run-1", plan_json=PLAN, at=at(0))
        _answered(state, "answered")
        _answered(state, "applied")
        state.journal.mark_applied("applied", run_id="run-1", at=at(2))
        _answered(state, "done")
        state.journal.mark_applied("done", run_id="run-1", at=at(2))
        state.journal.mark_committed(["done"], commit_sha="c0ffee", at=at(3))

    with State.open(state_path) as state:
        state.runs.start("run-2", "heartbeat", at(60))
        states = {
            key: record.state
            for key in ("planned-only", "answered", "applied", "done")
            if (record := state.journal.get(key)) is not None
        }
        assert states == {
            "planned-only": "planned",
            "answered": "answered",
            "applied": "applied",
            "done": "committed",
        }
        assert [run.run_id for run in state.runs.unfinished("heartbeat")] == ["run-1", "run-2"]
        # The next run finishes the applied chunk: it redoes the apply, then commits.
        redone = state.journal.mark_applied("applied", run_id="run-2", at=at(61))
        assert redone.run_id == "run-2"
        assert redone.answer_json is not None


KILLED_RUN = textwrap.dedent(
    """
    import os, sys
    from datetime import UTC, datetime
    from pathlib import Path
    from memoryd.llm.prices import Usage
    from memoryd.state import State

    now = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    state = State.open(Path(sys.argv[1]))
    state.runs.start("killed-run", "heartbeat", now)
    state.journal.plan("k1", run_id="killed-run", plan_json="{}", at=now)
    with state.transaction():
        state.journal.record_answer(
            "k1", answer_json='{"paid": true}', usage=Usage(10, 2), model="m", at=now
        )
        state.usage.record(
            at=now, model="m", usage=Usage(10, 2), cost_usd=0.5, job="heartbeat",
            run_id="killed-run",
        )
    state.journal.plan("k2", run_id="killed-run", plan_json="{}", at=now)
    held = state.transaction()  # kept referenced: a collected generator would roll back
    held.__enter__()  # a transaction the kill interrupts
    state.journal.record_answer(
        "k2", answer_json='{"half": true}', usage=Usage(1, 1), model="m", at=now
    )
    os._exit(9)  # killed: no close, an open transaction, nothing flushed by Python
    """
)


def test_a_killed_process_leaves_committed_answers_and_loses_the_open_transaction(
    state_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(state_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 9, result.stderr

    with State.open(state_path) as state:
        kept = state.journal.answered("k1")
        assert kept is not None
        assert kept.answer_json == '{"paid":true}'
        assert state.usage.spend_between(at(-1), at(1)) == 0.5
        assert state.usage.totals_for_run("killed-run").usage == Usage(10, 2)
        lost = state.journal.get("k2")
        assert lost is not None
        assert lost.state == "planned"
        assert kept.state == "answered"
        assert [r.run_id for r in state.runs.unfinished()] == ["killed-run"]


def test_prune_committed_keeps_recent_and_unfinished_chunks(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    for key, committed_at in (("old", at(1)), ("new", at(100))):
        _answered(state, key)
        state.journal.mark_applied(key, run_id="run-1", at=at(1))
        state.journal.mark_committed([key], commit_sha="x", at=committed_at)
    _answered(state, "open")
    assert state.journal.prune_committed(before=at(50)) == 1
    assert state.journal.get("old") is None
    assert state.journal.get("new") is not None
    assert state.journal.get("open") is not None


def test_discard_forgets_a_chunk_in_any_state(state: State) -> None:
    state.runs.start("run-1", "heartbeat", at(0))
    _answered(state, "k1")
    assert state.journal.discard("k1")
    assert not state.journal.discard("k1")
    assert state.journal.get("k1") is None
    assert state.journal.plan("k1", run_id="run-1", plan_json=PLAN, at=at(5)).state == "planned"


def test_runs_record_start_end_and_counters(state: State) -> None:
    state.runs.start("r1", "heartbeat", at(0))
    state.runs.start("r2", "rewrite", at(1))
    state.runs.start("r3", "heartbeat", at(2))
    state.runs.finish(
        "r1",
        finished_at=at(0.5),
        outcome="ok",
        commit_sha="abc",
        counters={"facts_added": 7, "cost_usd": 0.02},
    )
    state.runs.finish("r3", finished_at=at(3), outcome="partial")

    first = state.runs.get("r1")
    assert first is not None
    assert first.finished
    assert first.counters == {"cost_usd": 0.02, "facts_added": 7}
    assert first.commit_sha == "abc"
    assert [r.run_id for r in state.runs.recent()] == ["r3", "r2", "r1"]
    assert [r.run_id for r in state.runs.recent("heartbeat", limit=1)] == ["r3"]
    last_ok = state.runs.last("heartbeat", outcome="ok")
    assert last_ok is not None
    assert last_ok.run_id == "r1"
    last_any = state.runs.last("heartbeat")
    assert last_any is not None
    assert last_any.run_id == "r3"
    assert state.runs.last("rewrite") is None
    assert [r.run_id for r in state.runs.unfinished()] == ["r2"]


def test_a_run_is_finished_from_its_jobs_report(state: State) -> None:
    class Report:
        outcome = "partial"
        commit = "def"

        def log_fields(self) -> dict[str, object]:
            return {"outcome": self.outcome, "facts_added": 2}

    state.runs.start("r1", "rewrite", at(0))
    state.runs.finish_report("r1", Report(), finished_at=at(1))

    record = state.runs.get("r1")
    assert record is not None
    assert (record.outcome, record.commit_sha, record.finished_at) == ("partial", "def", at(1))
    assert record.counters == {"facts_added": 2, "outcome": "partial"}


def test_runs_refuse_a_duplicate_id_and_an_unknown_finish(state: State) -> None:
    state.runs.start("r1", "heartbeat", at(0))
    with pytest.raises(StateError):
        state.runs.start("r1", "heartbeat", at(1))
    with pytest.raises(StateError, match="no run"):
        state.runs.finish("r9", finished_at=at(1), outcome="ok")


def test_runs_are_ordered_as_recorded_not_by_their_clock(state: State) -> None:
    # The clock was a day fast for one run, then corrected: the run recorded after it is newer.
    state.runs.start("fast-clock", "heartbeat", at(86_400))
    state.runs.finish("fast-clock", finished_at=at(86_401), outcome="ok")
    state.runs.start("corrected", "heartbeat", at(60))
    state.runs.finish("corrected", finished_at=at(61), outcome="ok")

    last = state.runs.last("heartbeat")
    assert last is not None
    assert last.run_id == "corrected"
    assert [run.run_id for run in state.runs.recent("heartbeat")] == ["corrected", "fast-clock"]
    assert last.sequence > state.runs.recent("heartbeat")[1].sequence


def test_usage_is_stored_compactly_and_an_older_journal_is_converted(tmp_path: Path) -> None:
    compact = next(m.version for m in MIGRATIONS if m.description == "compact chunk usage")
    path = tmp_path / "state.db"
    with StateDB.open(path, migrations=MIGRATIONS[: compact - 1]) as db:
        db.execute(
            "INSERT INTO runs (run_id, job, started_at) VALUES ('run-1', 'heartbeat', ?)",
            (at(0).isoformat(timespec="microseconds"),),
        )
        for number in range(3):
            db.execute(
                "INSERT INTO chunks (chunk_key, state, run_id, plan_json, planned_at, usage_json)"
                " VALUES (?, 'answered', 'run-1', '{}', '2026-03-01T09:30:00.000000+00:00', ?)",
                (
                    f"k{number}",
                    json.dumps(
                        {
                            "input_tokens": 1200 + number,
                            "output_tokens": 80,
                            "cache_creation_input_tokens": 7,
                            "cache_read_input_tokens": 900,
                        },
                        sort_keys=True,
                    ),
                ),
            )
        db.execute(
            "INSERT INTO chunks (chunk_key, state, run_id, plan_json, planned_at)"
            " VALUES ('k9', 'planned', 'run-1', '{}', '2026-03-01T09:30:00.000000+00:00')"
        )
    with State.open(path) as state:
        stored = [
            row[0] for row in state.db.query("SELECT usage_json FROM chunks ORDER BY chunk_key")
        ]
        assert stored == ["[1200,80,7,900]", "[1201,80,7,900]", "[1202,80,7,900]", None]
        for number in range(3):
            record = state.journal.get(f"k{number}")
            assert record is not None
            assert record.usage == Usage(1200 + number, 80, 7, 900)
        record = state.journal.get("k9")
        assert record is not None and record.usage is None
        state.runs.start("run-2", "heartbeat", at(0))
        _answered(state, "new", run_id="run-2")
        assert state.db.scalar("SELECT usage_json FROM chunks WHERE chunk_key = 'new'") == (
            "[1200,80,0,900]"
        )
        new = state.journal.get("new")
        assert new is not None and new.usage == USAGE
