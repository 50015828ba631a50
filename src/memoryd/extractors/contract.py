"""The LLM tool contract of docs/llm-contract.md, as pydantic models.

The models double as the tool definition the model sees (their JSON Schema is the tool's
`input_schema`) and as the validator of its answer: an answer that does not validate is never
written. Texts are normalised on the way in — whitespace collapsed to single spaces, so a fact can
never forge a Markdown heading or a second list item — and bounded in length and count, so one
runaway answer cannot flood the store.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memoryd.store.vocabulary import Category, EntityKind, EntityStatus

_WHITESPACE = re.compile(r"\s+")


def _one_line(value: str) -> str:
    text = _WHITESPACE.sub(" ", value).strip()
    if not text:
        raise ValueError("must not be empty")
    return text


def _date(value: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError("must be a date YYYY-MM-DD")
    date.fromisoformat(value)  # refuses 2025-02-30 with a clear message
    return value


Name = Annotated[str, Field(max_length=200), AfterValidator(_one_line)]
Text = Annotated[str, Field(max_length=1000), AfterValidator(_one_line)]
FactId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,80}-\d{3,}$")]
# Which fenced section of a request an item comes from (`s1`, `s2`, ...), when a request holds
# several conversations (`memoryd.extractors.sections`); left out when it holds one.
SectionId = Annotated[str, Field(pattern=r"^s[1-9]\d{0,2}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EntityName(_Strict):
    name: Name = Field(description="The entity's usual full name, e.g. 'Jane Doe' or 'Acme'.")
    kind: EntityKind


class FactIn(_Strict):
    entity: EntityName = Field(description="The entity the fact is about.")
    fact: Text = Field(description="One durable, self-contained statement.")
    category: Category
    timestamp: Annotated[str, AfterValidator(_date)] | None = Field(
        default=None, description="When the fact became true (YYYY-MM-DD), if known."
    )
    supersedes: list[FactId] = Field(
        default_factory=list,
        max_length=20,
        description="Ids of existing facts of the same entity that this fact replaces.",
    )
    related: list[EntityName] = Field(default_factory=list, max_length=20)
    section: SectionId | None = None


class EntityIn(_Strict):
    name: Name
    kind: EntityKind
    aliases: list[Name] = Field(default_factory=list, max_length=20)
    relationship: bool = Field(
        default=False,
        description="True when the entity relates directly to the user or their company "
        "(family, coworker, partner, client).",
    )
    significant: bool = Field(
        default=False, description="True for a significant project or company in the user's life."
    )
    status: EntityStatus = "active"


class TimelineIn(_Strict):
    time: Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")] | None = Field(
        default=None, description="Local time of day HH:MM, if known."
    )
    text: Text
    section: SectionId | None = None


class SkillIn(_Strict):
    topic: Annotated[str, Field(max_length=100), AfterValidator(_one_line)]
    tip: Text
    routine: bool = Field(
        default=False, description="True when the tip belongs to the routine this run was doing."
    )
    section: SectionId | None = None


class RecordMemories(_Strict):
    """Input of the `record_memories` tool: everything worth keeping from one chunk."""

    facts: list[FactIn] = Field(default_factory=list, max_length=100)
    entities: list[EntityIn] = Field(default_factory=list, max_length=100)
    timeline: list[TimelineIn] = Field(default_factory=list, max_length=100)
    skills: list[SkillIn] = Field(default_factory=list, max_length=50)
    tacit: list[Text] = Field(default_factory=list, max_length=50)
    accessed: list[FactId] = Field(default_factory=list, max_length=200)

    @property
    def empty(self) -> bool:
        return not (
            self.facts
            or self.entities
            or self.timeline
            or self.skills
            or self.tacit
            or self.accessed
        )


RECORD_MEMORIES_TOOL = "record_memories"
RECORD_MEMORIES_DESCRIPTION = (
    "Record what is worth keeping from the excerpt (facts, entities, timeline, skills, tacit, "
    "accessed fact ids). Empty lists are a valid answer."
)
