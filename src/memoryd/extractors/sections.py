"""Several short conversations in one call: sections, and answers attributed per section.

A request may hold several chunks of the same agent, of one day or several, each fenced in its
own section (`s1`, `s2`, ... in chronological order) that gives its date. The answer is one
`record_memories` input whose facts, timeline entries and skills name their `section` (required
when there are several sections, an id offered); `split_answer` turns it into one answer per
chunk, as if each had been asked alone, so that each chunk keeps its own provenance, journal
record and cursor semantics:

- facts, timeline entries and skills go to the section they name;
- an entity goes to every section whose facts name it (as subject or related entity), or to the
  first section when no fact does;
- an accessed fact id goes to the latest section whose known entities showed it (the last
  section when none did), so that the fact counts one access, dated by the latest conversation
  that could have used it;
- a tacit line goes to the section whose text shares the most words with it (the first on a
  tie or when none does), so that the safety gate judges it against the conversation it came
  from: a line lifted from one section's tool output is not credited to another's user.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoryd.extractors.contract import EntityName, RecordMemories
from memoryd.extractors.gate import content_words
from memoryd.store.entities import normalize_name

# At most this many chunks share one call.
MAX_SECTIONS = 16


def section_ids(count: int) -> list[str]:
    return [f"s{number}" for number in range(1, count + 1)]


def attribution_errors(answer: RecordMemories, ids: Sequence[str]) -> list[str]:
    """What is wrong with the answer's section attribution (empty when nothing is)."""
    problems: list[str] = []
    offered = ", ".join(ids)
    lists: list[tuple[str, list[str | None]]] = [
        ("facts", [fact.section for fact in answer.facts]),
        ("timeline", [entry.section for entry in answer.timeline]),
        ("skills", [skill.section for skill in answer.skills]),
    ]
    for name, named in lists:
        for index, section in enumerate(named):
            if section is None:
                if len(ids) > 1:
                    problems.append(f"{name}.{index}.section: required, one of {offered}")
            elif section not in ids:
                problems.append(f"{name}.{index}.section: {section!r} is not one of {offered}")
    return problems


def _key(entity: EntityName) -> tuple[str, str]:
    return normalize_name(entity.name), entity.kind


def split_answer(
    answer: RecordMemories,
    ids: Sequence[str],
    texts: Sequence[str] = (),
    shown: Sequence[str] = (),
) -> list[RecordMemories]:
    """One answer per section, in the order of `ids`, with `section` left out (the caller has
    checked `attribution_errors`); `texts` are the sections' texts and `shown` the known
    entities each was shown with, in the same order."""
    first = ids[0]
    accessed: dict[str, list[str]] = {section: [] for section in ids}
    for fact_id in answer.accessed:
        accessed[_showing(fact_id, ids, shown)].append(fact_id)
    tacit: dict[str, list[str]] = {section: [] for section in ids}
    for line in answer.tacit:
        tacit[_best_section(line, ids, texts)].append(line)
    facts: dict[str, list[object]] = {section: [] for section in ids}
    timeline: dict[str, list[object]] = {section: [] for section in ids}
    skills: dict[str, list[object]] = {section: [] for section in ids}
    named: dict[tuple[str, str], list[str]] = {}
    for fact in answer.facts:
        section = fact.section or first
        facts[section].append(fact.model_copy(update={"section": None}))
        for entity in (fact.entity, *fact.related):
            where = named.setdefault(_key(entity), [])
            if section not in where:
                where.append(section)
    for entry in answer.timeline:
        timeline[entry.section or first].append(entry.model_copy(update={"section": None}))
    for skill in answer.skills:
        skills[skill.section or first].append(skill.model_copy(update={"section": None}))
    entities: dict[str, list[object]] = {section: [] for section in ids}
    for spec in answer.entities:
        for section in named.get((normalize_name(spec.name), spec.kind), [first]):
            entities[section].append(spec)
    return [
        RecordMemories.model_validate(
            {
                "facts": facts[section],
                "entities": entities[section],
                "timeline": timeline[section],
                "skills": skills[section],
                "tacit": tacit[section],
                "accessed": accessed[section],
            }
        )
        for section in ids
    ]


def _best_section(line: str, ids: Sequence[str], texts: Sequence[str]) -> str:
    wanted = content_words(line)
    best, best_score = ids[0], 0
    for section, text in zip(ids, texts, strict=False):
        score = len(wanted & content_words(text))
        if score > best_score:
            best, best_score = section, score
    return best


def _showing(fact_id: str, ids: Sequence[str], shown: Sequence[str]) -> str:
    """The latest section whose known entities list `fact_id` (as `  <id>:` or `  <id> (`)."""
    pattern = re.compile(rf"^  {re.escape(fact_id)}[: ]", re.MULTILINE)
    for section, known in reversed(list(zip(ids, shown, strict=False))):
        if pattern.search(known):
            return section
    return ids[-1]
