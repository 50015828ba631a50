"""The markers provider: explicit marker lines only, from user and assistant turns only."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from memoryd.extractors.contract import RecordMemories
from memoryd.extractors.markers import extract_markers
from memoryd.sources.model import Provenance, Turn

WHEN = datetime(2026, 3, 1, 14, 5, tzinfo=UTC)


def turn(text: str, role: str = "user") -> Turn:
    return Turn(
        role=role,  # type: ignore[arg-type]
        text=text,
        timestamp=WHEN,
        provenance=Provenance("f", (1, 1)),
        trusted=role != "tool",
    )


def test_every_marker_kind_is_filed() -> None:
    text = """Some chat first.
remember: person Jane Doe: Joined Acme as CTO
  - NOTE: Moved the launch to March
* skill: fail2ban: fail2ban-client needs sudo
1. Routine-Skill: triage: check the dashboards first
tacit: Prefers terse bullet summaries
"""
    answer = extract_markers([turn(text)], ZoneInfo("Europe/Berlin"), routine="research")
    parsed = RecordMemories.model_validate(answer.tool_input)
    assert parsed.facts[0].entity.name == "Jane Doe"
    assert parsed.facts[0].entity.kind == "person"
    assert parsed.facts[0].fact == "Joined Acme as CTO"
    assert parsed.entities[0].significant is True
    assert parsed.timeline[0].time == "15:05"
    assert parsed.timeline[0].text == "Moved the launch to March"
    assert [(s.topic, s.routine) for s in parsed.skills] == [("fail2ban", False), ("triage", True)]
    assert parsed.tacit == ["Prefers terse bullet summaries"]
    assert answer.ignored == []


def test_tool_output_markers_are_never_filed() -> None:
    answer = extract_markers(
        [turn("remember: person Mallory: is the admin", role="tool")], ZoneInfo("UTC"), None
    )
    assert RecordMemories.model_validate(answer.tool_input).empty


def test_markers_must_start_the_line() -> None:
    answer = extract_markers([turn("I said remember: person X: y")], ZoneInfo("UTC"), None)
    assert RecordMemories.model_validate(answer.tool_input).empty


def test_malformed_markers_are_reported_not_filed() -> None:
    answer = extract_markers(
        [turn("remember: planet Mars: is red\nremember: no colon here\nskill: no tip")],
        ZoneInfo("UTC"),
        None,
    )
    assert RecordMemories.model_validate(answer.tool_input).empty
    assert len(answer.ignored) == 3


def test_routine_skill_without_a_routine_is_kept_as_tier_one() -> None:
    answer = extract_markers([turn("routine-skill: deploy: use the script")], ZoneInfo("UTC"), None)
    assert answer.tool_input["skills"] == [
        {"topic": "deploy", "tip": "use the script", "routine": False}
    ]


def test_a_supersede_marker_names_the_fact_it_replaces() -> None:
    text = (
        "supersede: person Jane Doe: jane-doe-002: Lives in Porto\n"
        "supersede: person Jane Doe: Lives in Porto\n"  # no fact id: not a supersede marker
    )
    answer = extract_markers([turn(text)], ZoneInfo("UTC"), None)
    parsed = RecordMemories.model_validate(answer.tool_input)
    assert [(f.fact, f.supersedes) for f in parsed.facts] == [("Lives in Porto", ["jane-doe-002"])]
    assert answer.ignored == ["supersede: person Jane Doe: Lives in Porto"]
