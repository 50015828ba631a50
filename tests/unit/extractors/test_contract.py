"""The record_memories contract: what validates, what is refused, how text is normalised."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from memoryd.extractors.contract import RecordMemories

FULL: dict[str, Any] = {
    "facts": [
        {
            "entity": {"name": "Jane Doe", "kind": "person"},
            "fact": "Joined Acme as CTO in March 2025",
            "category": "milestone",
            "timestamp": "2025-03-15",
            "supersedes": ["jane-doe-001"],
            "related": [{"name": "Acme", "kind": "company"}],
        }
    ],
    "entities": [
        {
            "name": "Jane Doe",
            "kind": "person",
            "aliases": ["Jane"],
            "relationship": True,
            "significant": False,
            "status": "active",
        }
    ],
    "timeline": [{"time": "14:05", "text": "Moved the launch to March"}],
    "skills": [{"topic": "fail2ban", "tip": "run it as sudo -n", "routine": False}],
    "tacit": ["Prefers terse bullet summaries over prose"],
    "accessed": ["acme-004"],
}


def test_the_design_example_validates() -> None:
    answer = RecordMemories.model_validate(FULL)
    assert answer.facts[0].supersedes == ["jane-doe-001"]
    assert answer.entities[0].aliases == ["Jane"]
    assert not answer.empty


def test_empty_answer_is_valid_and_empty() -> None:
    assert RecordMemories.model_validate({}).empty


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("facts", 0, "category"), "gossip"),
        (("facts", 0, "entity", "kind"), "planet"),
        (("facts", 0, "timestamp"), "March 2025"),
        (("facts", 0, "timestamp"), "2025-02-30"),
        (("facts", 0, "supersedes"), ["../../etc/passwd"]),
        (("facts", 0, "fact"), "   "),
        (("timeline", 0, "time"), "25:00"),
        (("entities", 0, "status"), "deleted"),
        (("accessed",), ["not an id"]),
        (("facts", 0, "entity", "name"), "x" * 201),
    ],
)
def test_schema_breaks_are_refused(path: tuple[Any, ...], value: Any) -> None:
    import copy

    data = copy.deepcopy(FULL)
    target: Any = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(ValidationError):
        RecordMemories.model_validate(data)


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError):
        RecordMemories.model_validate({"facts": [], "path": "/etc/passwd"})


def test_text_is_collapsed_to_one_line_so_it_cannot_forge_markdown() -> None:
    answer = RecordMemories.model_validate(
        {"tacit": ["likes tea\n# Heading\n- injected item"], "timeline": [{"text": " a\tb "}]}
    )
    assert answer.tacit == ["likes tea # Heading - injected item"]
    assert answer.timeline[0].text == "a b"


def test_counts_are_bounded() -> None:
    with pytest.raises(ValidationError):
        RecordMemories.model_validate({"tacit": ["x"] * 51})
