"""Bounding the skills files and the tacit file: `consolidate_skills` (docs/llm-contract.md, issue
5).

Three kinds of file grow between weekly rewrites and are brought back under `MAX_LINES` lines:

- an agent's `skills-index.md` (tier 1): its tips are every content line of the agent's topic
  files; the answer's topics become the new topic files and index;
- a routine file `routines/<routine>-skills.md` (tier 2): its tips are the lines of its `## `
  sections; the preamble stays, the sections are rewritten;
- the tacit file: its tips are its bullets; every other line (the header, anything a person
  wrote) stays, the bullets are rewritten. It is also consolidated below its bound whenever its
  bullets changed since it was last consolidated (`tacit_due`), so that restated rules are merged
  week by week instead of piling up; its bound counts characters as well as lines.

memoryd numbers the existing tips `t1`, `t2`, ... in the request. An answer is refused as a
whole (`ConsolidationRefusedError`, nothing written) when some tip is in no `from` (and, for the
tacit file only, in no `dropped` entry with its reason), when a number is both kept and dropped
or was not given, or when the rewritten file would still pass the bound: nothing is ever lost
silently and the bound holds. A topic file the answer no longer uses is removed
(its tips live on in the topics the answer names; git keeps the old file in history).
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from memoryd.errors import MemorydError
from memoryd.llm.base import ToolRequest, ToolSpec
from memoryd.llm.schema import tool_input_schema
from memoryd.prompts import load_prompt
from memoryd.rewrite.summary import fence_marker
from memoryd.rewrite.targets import (
    MAX_LINES,
    MAX_TACIT_CHARS,
    NumberedTip,
    Target,
    content_digest,
    find_targets,
    line_count,
    tacit_due,
)
from memoryd.store.danger import dangerous_reasons
from memoryd.store.markdown import Section, join_sections
from memoryd.store.provenance import Move, carry_provenance
from memoryd.store.skills import GIST_LENGTH, topic_slug
from memoryd.store.text import clip, one_line, words
from memoryd.worktree import FileTransaction

CONSOLIDATE_TOOL: Final = "consolidate_skills"
MAX_OUTPUT_TOKENS: Final = 8000
# Re-exported: the callers of consolidation find their targets here.
__all__ = [
    "MAX_LINES",
    "MAX_TACIT_CHARS",
    "NumberedTip",
    "Target",
    "content_digest",
    "find_targets",
    "tacit_due",
]


class ConsolidationRefusedError(MemorydError):
    """A consolidation answer would lose a tip or break the bound; nothing of it is written."""

    def __init__(self, reason: str, *, over_bound: bool = False) -> None:
        self.reason = reason
        self.over_bound = over_bound  # the answer was whole, but not short enough
        super().__init__(f"consolidation refused: {reason}")


class ConsolidatedTip(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    text: str = Field(min_length=1, max_length=1000)
    from_: list[str] = Field(
        alias="from", min_length=1, description="numbers of the earlier tips this tip replaces"
    )


class ConsolidatedTopic(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=120)
    tips: list[ConsolidatedTip] = Field(min_length=1)


class DroppedTip(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: list[str] = Field(alias="from", min_length=1, description="numbers of the tips dropped")
    reason: str = Field(min_length=1, max_length=500, description="why they no longer hold")


class ConsolidateSkills(BaseModel):
    """The input of the `consolidate_skills` tool."""

    model_config = ConfigDict(extra="forbid")

    topics: list[ConsolidatedTopic] = Field(min_length=1)
    dropped: list[DroppedTip] = Field(
        default_factory=list,
        description="tacit file only: earlier lines that no longer hold (a later line "
        "contradicts them), each with its reason",
    )


def consolidate_tool() -> ToolSpec:
    return ToolSpec(
        name=CONSOLIDATE_TOOL,
        description="Record the consolidated topics and tips; every earlier tip number must "
        "appear in the 'from' of some new tip.",
        input_schema=tool_input_schema(ConsolidateSkills),
    )


def prompt_refs() -> tuple[str, str]:
    return (load_prompt("consolidate-system").ref, load_prompt("consolidate-user").ref)


def build_request(target: Target, *, model: str, correction: str = "") -> ToolRequest:
    tips = "\n".join(f"{tip.number} [{one_line(tip.topic)}] {tip.text}" for tip in target.tips)
    user = load_prompt("consolidate-user").render(
        what=target.label, limits=target.limits, nonce=fence_marker(tips), tips=tips
    )
    return ToolRequest(
        model=model,
        system=load_prompt("consolidate-system").text,
        tool=consolidate_tool(),
        user_content=f"{user}\n\n{correction}" if correction else user,
        max_tokens=MAX_OUTPUT_TOKENS,
    )


def parse_answer(tool_input: dict[str, object] | None) -> ConsolidateSkills:
    """The validated answer. Raise ConsolidationRefusedError when it does not fit the schema."""
    if tool_input is None:
        raise ConsolidationRefusedError(f"no {CONSOLIDATE_TOOL} call in the answer")
    try:
        return ConsolidateSkills.model_validate(tool_input)
    except ValueError as error:
        raise ConsolidationRefusedError(f"the answer does not fit the schema: {error}") from None


def check_answer(target: Target, answer: ConsolidateSkills, *, gate: bool = True) -> None:
    """Raise ConsolidationRefusedError when a tip is lost or a `from` names an unknown tip, or,
    with `gate`, when a merged tip says what the gate holds and none of its tips said."""
    given = {tip.number for tip in target.tips}
    cited = {number.strip() for t in answer.topics for tip in t.tips for number in tip.from_}
    dropped = {number.strip() for drop in answer.dropped for number in drop.from_}
    if dropped and target.kind != "tacit":
        raise ConsolidationRefusedError("only tacit lines may be dropped; tips are merged")
    if cited & dropped:
        raise ConsolidationRefusedError(f"tips both kept and dropped: {sorted(cited & dropped)}")
    if any(not words(drop.reason) for drop in answer.dropped):
        raise ConsolidationRefusedError("a dropped line has no reason")
    cited |= dropped
    unknown = sorted(cited - given, key=_tip_order)
    if unknown:
        raise ConsolidationRefusedError(f"'from' names tips that were not given: {unknown}")
    missing = sorted(given - cited, key=_tip_order)
    if missing:
        raise ConsolidationRefusedError(f"tips in no 'from' (they would be lost): {missing}")
    for topic in answer.topics:
        if not words(topic.topic) or not all(words(tip.text) for tip in topic.tips):
            raise ConsolidationRefusedError("a topic or tip has no words")
    if not gate:
        return
    # The safety gate's classes: a merged tip may not say what none of its tips said.
    by_number = {tip.number: tip for tip in target.tips}
    for topic in answer.topics:
        for tip in topic.tips:
            merged = {
                reason
                for number in tip.from_
                if (old := by_number.get(number.strip())) is not None
                for reason in dangerous_reasons(f"{old.topic} {old.text}")
            }
            new = set(dangerous_reasons(f"{topic.topic} {tip.text}")) - merged
            if new:
                raise ConsolidationRefusedError(
                    f"a merged tip adds what the gate holds: {sorted(new)}"
                )


def _tip_order(number: str) -> tuple[int, str]:
    digits = number[1:]
    return (int(digits), number) if number.startswith("t") and digits.isdigit() else (0, number)


def apply_consolidation(
    tx: FileTransaction, target: Target, answer: ConsolidateSkills
) -> list[str]:
    """Check the answer, then stage the rewritten files; return their paths. Raise
    ConsolidationRefusedError (nothing staged) when the answer is refused."""
    check_answer(target, answer)
    files: dict[str, str | None]
    if target.kind == "skills":
        files = _render_skills(target, answer)
    elif target.kind == "routine":
        files = {target.path: _render_routine(target, answer)}
    else:
        files = {target.path: _render_tacit(target, answer)}
    bounded = files[target.path] or ""
    if line_count(bounded) > MAX_LINES:
        raise ConsolidationRefusedError(
            f"{target.path} would still have {line_count(bounded)} lines (at most {MAX_LINES})",
            over_bound=True,
        )
    if target.kind == "tacit" and len(bounded) > MAX_TACIT_CHARS:
        raise ConsolidationRefusedError(
            f"{target.path} would still have {len(bounded)} characters (at most {MAX_TACIT_CHARS})",
            over_bound=True,
        )
    moves = _moves(target, answer)
    for path, text in sorted(files.items()):
        if text is None:
            tx.remove(path)
        elif tx.read_text(path) != text:
            tx.write_text(path, text)
    carry_provenance(tx, moves)
    return sorted(files)


def _moves(target: Target, answer: ConsolidateSkills) -> list[Move]:
    """Each merged tip's (old path, old text, new path, new text), for its provenance."""
    slugs = {name: slug for slug, name in target.topic_files}
    by_number = {tip.number: tip for tip in target.tips}

    def was(topic: str) -> str:
        if target.kind != "skills":
            return target.path
        return f"{target.folder}/{slugs.get(topic, topic_slug(topic))}.md"

    moves: list[Move] = []
    for topic in answer.topics:
        new_path = target.path
        if target.kind == "skills":
            new_path = f"{target.folder}/{topic_slug(clip(topic.topic, 120))}.md"
        for tip in topic.tips:
            for number in tip.from_:
                old = by_number.get(number.strip())
                if old is not None:
                    moves.append((was(old.topic), old.text, new_path, one_line(tip.text)))
    return moves


def _merged_topics(answer: ConsolidateSkills) -> list[tuple[str, str, list[str]]]:
    """(slug, name, tips) per topic; topics whose names share a slug are merged, tips kept once."""
    merged: dict[str, tuple[str, list[str]]] = {}
    for topic in answer.topics:
        name = clip(topic.topic, 120)
        slug = topic_slug(name)
        _, tips = merged.setdefault(slug, (name, []))
        for tip in topic.tips:
            text = one_line(tip.text)
            if text not in tips:
                tips.append(text)
    return [(slug, name, tips) for slug, (name, tips) in merged.items()]


def _render_skills(target: Target, answer: ConsolidateSkills) -> dict[str, str | None]:
    """The files to write (text) and to remove (None)."""
    folder = target.folder
    agent = folder.rsplit("/", 1)[-1]
    topics = _merged_topics(answer)
    files: dict[str, str | None] = {}
    index = [
        f"# Skills of {agent}",
        "",
        "One line per topic; the tips are in each topic's file.",
        "",
    ]
    for slug, name, tips in topics:
        files[f"{folder}/{slug}.md"] = f"# {name}\n\n" + "".join(f"- {tip}\n" for tip in tips)
        label = name.replace("[", "(").replace("]", ")")
        index.append(f"- [{label}]({slug}.md): {clip(tips[0], GIST_LENGTH)}")
    files[target.path] = "\n".join(index) + "\n"
    kept = {slug for slug, _, _ in topics}
    for slug, _name in target.topic_files:
        if slug not in kept:
            files[f"{folder}/{slug}.md"] = None
    return files


def _render_routine(target: Target, answer: ConsolidateSkills) -> str:
    sections = [
        Section(name, [f"- {tip}" for tip in tips]) for _, name, tips in _merged_topics(answer)
    ]
    return join_sections(list(target.kept_lines), sections)


def _render_tacit(target: Target, answer: ConsolidateSkills) -> str:
    tips: list[str] = []
    for _, _, topic_tips in _merged_topics(answer):
        tips += [tip for tip in topic_tips if tip not in tips]
    kept = "\n".join(target.kept_lines).rstrip("\n")
    return kept + "\n\n" + "".join(f"- {tip}\n" for tip in tips)
