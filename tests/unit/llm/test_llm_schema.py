"""Pydantic models as portable tool input schemas."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from memoryd.llm.schema import SchemaError, tool_input_schema


class EntityRef(BaseModel):
    name: str = Field(description="The entity's name as written.")
    kind: Literal["person", "company", "project"]


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entity: EntityRef = Field(description="Whom the fact is about.")
    title: str
    related: list[EntityRef] = []
    maybe: EntityRef | None = None
    counts: dict[str, int] = {}


class Answer(BaseModel):
    facts: list[Fact]


class Node(BaseModel):
    children: list[Node] = []


def _walk(schema: Any) -> list[dict[str, Any]]:
    """Every dict inside `schema`, itself included."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        found.append(schema)
        for value in schema.values():
            found.extend(_walk(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_walk(value))
    return found


def test_references_are_inlined_and_definitions_dropped() -> None:
    schema = tool_input_schema(Answer)

    assert "$ref" not in json.dumps(schema)
    assert "$defs" not in schema
    fact = schema["properties"]["facts"]["items"]
    assert fact["properties"]["entity"]["properties"]["kind"]["enum"] == [
        "person",
        "company",
        "project",
    ]
    assert fact["properties"]["related"]["items"]["required"] == ["name", "kind"]
    nullable = fact["properties"]["maybe"]["anyOf"]
    assert nullable[0]["properties"]["name"]["type"] == "string"
    assert nullable[1] == {"type": "null"}


def test_a_field_description_next_to_a_reference_is_kept() -> None:
    entity = tool_input_schema(Fact)["properties"]["entity"]
    assert entity["description"] == "Whom the fact is about."
    assert entity["properties"]["name"]["description"] == "The entity's name as written."


def test_every_object_with_properties_forbids_extra_fields() -> None:
    schema = tool_input_schema(Answer)

    objects = [s for s in _walk(schema) if s.get("type") == "object" and "properties" in s]
    assert len(objects) >= 4
    assert all(s["additionalProperties"] is False for s in objects)
    # A mapping field keeps its value schema: extra keys are its whole point.
    counts = schema["properties"]["facts"]["items"]["properties"]["counts"]
    assert counts["additionalProperties"] == {"type": "integer"}


def test_title_annotations_go_but_a_property_named_title_stays() -> None:
    fact = tool_input_schema(Fact)

    assert "title" in fact["properties"]
    assert fact["properties"]["title"] == {"type": "string"}
    assert all("title" not in s or s is fact["properties"] for s in _walk(fact))


def test_the_schema_is_the_same_every_time_and_safe_to_mutate() -> None:
    first = tool_input_schema(Answer)
    first["properties"]["facts"]["items"]["properties"].clear()

    assert tool_input_schema(Answer) == tool_input_schema(Answer)
    assert tool_input_schema(Answer)["properties"]["facts"]["items"]["properties"]


def test_a_recursive_model_is_refused() -> None:
    with pytest.raises(SchemaError, match="recursive"):
        tool_input_schema(Node)


class Bounded(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(default_factory=list, max_length=3, description="Known ids.")
    when: str | None = Field(default=None, pattern=r"^\d{4}$", description="A year.")
    maybe: EntityRef | None = None
    text: str = Field(max_length=10)


def test_a_lean_schema_keeps_the_shape_and_drops_annotations_and_bounds() -> None:
    full = tool_input_schema(Bounded)
    lean = tool_input_schema(Bounded, lean=True)

    for keyword in ("description", "default", "maxLength", "maxItems", "pattern"):
        assert keyword in json.dumps(full)
        assert f'"{keyword}"' not in json.dumps(lean)
    assert lean["required"] == ["text"]
    assert lean["additionalProperties"] is False
    assert lean["properties"]["ids"] == {"items": {"type": "string"}, "type": "array"}
    # An optional field is simply left out; its schema is the non-null option.
    assert lean["properties"]["when"] == {"type": "string"}
    assert lean["properties"]["maybe"]["properties"]["kind"]["enum"] == [
        "person",
        "company",
        "project",
    ]
    assert len(json.dumps(lean)) < len(json.dumps(full))


def test_the_record_memories_tool_sends_a_lean_schema_but_validates_fully() -> None:
    from memoryd.extractors.contract import RecordMemories
    from memoryd.extractors.llm_extractor import record_memories_tool

    schema = record_memories_tool().input_schema
    assert "maxItems" not in json.dumps(schema)
    assert schema["properties"]["facts"]["items"]["required"] == ["entity", "fact", "category"]
    with pytest.raises(ValueError, match="at most 100"):
        RecordMemories.model_validate({"tacit": ["x"] * 51, "facts": [{}] * 101})
