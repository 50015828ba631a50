"""One wording of a heartbeat's counters, for the printed line, the commit, `STATUS=` and
`status`: the same counters, the same names, singular and plural right."""

from __future__ import annotations

from memoryd.extractors.counters import COUNTED, ApplyCounters, counted_fields, describe_counts
from memoryd.extractors.report import HeartbeatReport, commit_message


def test_every_counter_that_is_not_zero_is_said_in_order() -> None:
    counters = ApplyCounters(
        facts_added=4, entities_created=4, skills_added=4, notes_added=4, tacit_added=2, tips_held=5
    )
    assert describe_counts(counters) == (
        "+4 facts, 4 entities, 4 skills, 4 notes, 2 tacit lines, 5 held for review"
    )


def test_one_of_each_is_singular() -> None:
    counters = ApplyCounters(
        facts_added=1, facts_superseded=1, entities_created=1, skills_added=1, notes_added=1,
        tacit_added=1, tips_held=1, accesses=1,
    )  # fmt: skip
    assert describe_counts(counters) == (
        "+1 fact, 1 superseded, 1 entity, 1 skill, 1 note, 1 tacit line, 1 held for review, "
        "1 access"
    )


def test_a_runs_recorded_fields_are_worded_as_its_counters() -> None:
    counters = ApplyCounters(facts_added=2, tacit_added=3, tips_held=1)
    report = HeartbeatReport(run_id="r", counters=counters)
    assert describe_counts(report.log_fields()) == describe_counts(counters)
    assert set(counted_fields(counters)) <= set(report.log_fields())
    assert {name for name, _word, _noun in COUNTED} == set(counted_fields(counters))


def test_the_commit_subject_is_the_same_wording() -> None:
    counters = ApplyCounters(facts_added=4, entities_created=4, tacit_added=2, tips_held=5)
    assert commit_message(counters) == f"heartbeat: {describe_counts(counters)}"
    assert "tacit lines" in commit_message(counters)
    assert "5 held for review" in commit_message(counters)


def test_a_commit_of_read_positions_only_says_so() -> None:
    writes = [".memoryd/hosts/box.json"]
    assert commit_message(ApplyCounters(), writes) == (
        "heartbeat: read positions only, nothing new filed"
    )
    assert commit_message(ApplyCounters(), [*writes, "life/index.md"]) == (
        "heartbeat: nothing new filed, 2 files brought up to date"
    )
