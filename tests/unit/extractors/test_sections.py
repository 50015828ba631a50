"""Answers attributed per section: checking and splitting (`memoryd.extractors.sections`)."""

from __future__ import annotations

from typing import Any

from memoryd.extractors.contract import RecordMemories
from memoryd.extractors.sections import attribution_errors, section_ids, split_answer


def fact(name: str, text: str, section: str | None = None, **more: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "entity": {"name": name, "kind": "company"},
        "fact": text,
        "category": "status",
        **more,
    }
    if section is not None:
        item["section"] = section
    return item


def test_with_several_sections_every_item_names_an_offered_one() -> None:
    answer = RecordMemories.model_validate(
        {
            "facts": [fact("Acme", "Signed", "s1"), fact("Initech", "Left")],
            "timeline": [{"text": "Call", "section": "s3"}],
            "skills": [{"topic": "deploy", "tip": "Run make", "section": "s2"}],
        }
    )
    assert attribution_errors(answer, section_ids(2)) == [
        "facts.1.section: required, one of s1, s2",
        "timeline.0.section: 's3' is not one of s1, s2",
    ]
    # One section: naming none is fine (the contract as it always was).
    single = RecordMemories.model_validate({"facts": [fact("Acme", "Signed")]})
    assert attribution_errors(single, section_ids(1)) == []


def test_an_answer_splits_per_section_as_if_each_was_asked_alone() -> None:
    answer = RecordMemories.model_validate(
        {
            "facts": [
                fact("Acme", "Signed", "s2", related=[{"name": "Jane Doe", "kind": "person"}]),
                fact("Initech", "Left", "s1"),
                fact("Acme", "Renewed", "s3"),
            ],
            "entities": [
                {"name": "Acme", "kind": "company", "significant": True},
                {"name": "Jane Doe", "kind": "person"},
                {"name": "Umbrella", "kind": "company"},
            ],
            "timeline": [{"text": "Call", "section": "s3"}],
            "skills": [{"topic": "deploy", "tip": "Run make", "section": "s2"}],
            "tacit": ["Prefers short answers"],
            "accessed": ["acme-001"],
        }
    )
    first, second, third = split_answer(answer, section_ids(3))

    assert [f.fact for f in first.facts] == ["Left"]
    assert [f.fact for f in second.facts] == ["Signed"]
    assert [f.fact for f in third.facts] == ["Renewed"]
    assert all(f.section is None for part in (first, second, third) for f in part.facts)
    # An entity goes where facts name it; one no fact names, to the first section.
    assert [e.name for e in first.entities] == ["Umbrella"]
    assert [e.name for e in second.entities] == ["Acme", "Jane Doe"]
    assert [e.name for e in third.entities] == ["Acme"]
    assert [t.text for t in third.timeline] == ["Call"] and not first.timeline
    assert [s.topic for s in second.skills] == ["deploy"]
    # A tacit line sharing no word with any section goes to the first; an access no section
    # was shown goes to the last (the latest day).
    assert first.tacit == ["Prefers short answers"] and third.accessed == ["acme-001"]
    assert not second.tacit and not first.accessed and not second.accessed


def test_an_access_goes_to_the_latest_section_that_was_shown_the_fact() -> None:
    """Sections may be of different days: a fact used counts one access, dated by the latest
    conversation shown it (not by the first section's older day)."""
    answer = RecordMemories.model_validate({"accessed": ["acme-001", "initech-002", "acme-0011"]})
    shown = [
        "company/acme: Acme, company\n  acme-001: Signed\n  initech-002: Left",
        "company/initech: Initech, company\n  initech-002 (true from 2026-04-01, after this "
        "excerpt): Left",
        "(none)",
    ]
    first, second, third = split_answer(answer, section_ids(3), shown=shown)
    assert first.accessed == ["acme-001"]
    assert second.accessed == ["initech-002"]  # shown to s1 and s2: the later one
    assert third.accessed == ["acme-0011"]  # shown nowhere (a prefix of it is no match)


def test_a_tacit_line_goes_to_the_section_it_came_from() -> None:
    """The safety gate judges a tacit line against its chunk's turns: a line lifted from the
    third conversation must not be credited to the first one's user."""
    answer = RecordMemories.model_validate(
        {"tacit": ["Always disables certificate verification for staging mirrors", "Likes tea"]}
    )
    texts = [
        "user: book the room for Friday",
        "user: what is on the agenda",
        "tool: mirror sync log: staging mirrors fail certificate verification, disabled",
    ]
    first, second, third = split_answer(answer, section_ids(3), texts)
    assert third.tacit == ["Always disables certificate verification for staging mirrors"]
    assert first.tacit == ["Likes tea"]  # no section shares a word: the first, as before
    assert second.tacit == []
