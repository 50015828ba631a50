"""Bounding the skills files and the tacit file: `consolidate_skills` (docs/llm-contract.md, issue
5).

Three kinds of file grow between weekly rewrites and are brought back under `MAX_LINES` lines:

- an agent's `skills-index.md` (tier 1): its tips are every content line of the agent's topic
  files; the answer's topics become the new topic files and index;
- a routine file `routines/<routine>-skills.md` (tier 2): its tips are the lines of its `## `
  sections; the preamble stays, the sections are rewritten;
- the tacit file: its tips are its bullets; every other line (the header, anything a person
  wrote) stays, the bullets are rewritten.

memoryd numbers the existing tips `t1`, `t2`, ... in the request. An answer is refused as a
whole (`ConsolidationRefusedError`, nothing written) when some tip is in no `from`, when a
`from` names a number that was not given, or when the rewritten file would still pass the bound:
nothing is ever lost and the bound holds. A topic file the answer no longer uses is removed
(its tips live on in the topics the answer names; git keeps the old file in history).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from memoryd.errors import MemorydError
from memoryd.llm.base import ToolRequest, ToolSpec
from memoryd.llm.schema import tool_input_schema
from memoryd.prompts import load_prompt
from memoryd.rewrite.summary import fence_marker
from memoryd.store.danger import dangerous_reasons
from memoryd.store.markdown import (
    Section,
    bullet_text,
    first_heading,
    join_sections,
    split_sections,
)
from memoryd.store.skills import GIST_LENGTH, INDEX_FILE, ROUTINES_DIR, topic_slug
from memoryd.store.text import clip, one_line, words
from memoryd.worktree import FileTransaction

CONSOLIDATE_TOOL: Final = "consolidate_skills"
MAX_LINES: Final = 50
# What the model is asked for: well under the bound, so the file has room to grow again.
TARGET_TOPICS: Final = 25
TARGET_ROUTINE_TIPS: Final = 25
TARGET_TACIT_TIPS: Final = 30
MAX_OUTPUT_TOKENS: Final = 8000

TargetKind = Literal["skills", "routine", "tacit"]


class ConsolidationRefusedError(MemorydError):
    """A consolidation answer would lose a tip or break the bound; nothing of it is written."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
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


class ConsolidateSkills(BaseModel):
    """The input of the `consolidate_skills` tool."""

    model_config = ConfigDict(extra="forbid")

    topics: list[ConsolidatedTopic] = Field(min_length=1)


def consolidate_tool() -> ToolSpec:
    return ToolSpec(
        name=CONSOLIDATE_TOOL,
        description="Record the consolidated topics and tips; every earlier tip number must "
        "appear in the 'from' of some new tip.",
        input_schema=tool_input_schema(ConsolidateSkills),
    )


def prompt_refs() -> tuple[str, str]:
    return (load_prompt("consolidate-system").ref, load_prompt("consolidate-user").ref)


@dataclass(frozen=True)
class NumberedTip:
    number: str  # t1, t2, ...
    topic: str
    text: str


@dataclass(frozen=True)
class Target:
    """One file (or an agent's set of topic files) past its bound."""

    kind: TargetKind
    path: str  # the bounded file: skills index, routine file or tacit file
    label: str  # what is consolidated, for the request and logs
    tips: tuple[NumberedTip, ...]
    content_digest: str  # of everything read: a refused answer is not asked again for it
    topic_files: tuple[tuple[str, str], ...] = ()  # skills: (slug, topic name) of each file
    kept_lines: tuple[str, ...] = ()  # routine: preamble; tacit: every non-bullet line

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""

    @property
    def limits(self) -> str:
        if self.kind == "skills":
            return f"at most {TARGET_TOPICS} topics (the index has one line per topic)"
        if self.kind == "routine":
            return f"at most {TARGET_ROUTINE_TIPS} tips in all, in at most 6 topics"
        return f"at most {TARGET_TACIT_TIPS} tips in all (topics are not kept for this file)"


def _digest(parts: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


def _number(pairs: list[tuple[str, str]]) -> tuple[NumberedTip, ...]:
    return tuple(NumberedTip(f"t{i}", topic, text) for i, (topic, text) in enumerate(pairs, 1))


def _content_lines(lines: Sequence[str]) -> list[str]:
    """The tips among a topic's lines: every line with words that is not a heading or comment."""
    tips = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "<!--")):
            continue
        text = one_line(bullet_text(stripped) or stripped)
        if words(text):
            tips.append(text)
    return tips


def _line_count(text: str | None) -> int:
    return len((text or "").splitlines())


def find_targets(tx: FileTransaction, skills_dir: str, tacit_file: str) -> list[Target]:
    """Every file past its bound, in path order (skills indexes, routine files, tacit file)."""
    targets: list[Target] = []
    for agent in tx.list_dir(skills_dir):
        folder = f"{skills_dir}/{agent}"
        # Listing first: a file here (the README) is no agent folder and lists as empty.
        names = tx.list_dir(folder)
        index_text = tx.read_text(f"{folder}/{INDEX_FILE}") if INDEX_FILE in names else None
        if _line_count(index_text) > MAX_LINES:
            targets.append(_skills_target(tx, folder, index_text or ""))
        routines = tx.list_dir(f"{folder}/{ROUTINES_DIR}") if ROUTINES_DIR in names else []
        for name in routines:
            path = f"{folder}/{ROUTINES_DIR}/{name}"
            if name.endswith("-skills.md"):
                text = tx.read_text(path)
                if _line_count(text) > MAX_LINES:
                    targets.append(_routine_target(path, text or ""))
    tacit = tx.read_text(tacit_file)
    if _line_count(tacit) > MAX_LINES:
        targets.append(_tacit_target(tacit_file, tacit or ""))
    return targets


def _skills_target(tx: FileTransaction, folder: str, index_text: str) -> Target:
    pairs: list[tuple[str, str]] = []
    files: list[tuple[str, str]] = []
    read: list[str] = [index_text]
    for name in tx.list_dir(folder):
        if not name.endswith(".md") or name == INDEX_FILE or name.startswith("."):
            continue
        text = tx.read_text(f"{folder}/{name}") or ""
        read.append(f"{name}\n{text}")
        slug = name.removesuffix(".md")
        topic = first_heading(text) or slug
        files.append((slug, topic))
        pairs += [(topic, tip) for tip in _content_lines(text.splitlines())]
    agent = folder.rsplit("/", 1)[-1]
    return Target(
        kind="skills",
        path=f"{folder}/{INDEX_FILE}",
        label=f"the skills of the agent {agent} (one file per topic)",
        tips=_number(pairs),
        content_digest=_digest(read),
        topic_files=tuple(files),
    )


def _routine_target(path: str, text: str) -> Target:
    preamble, sections = split_sections(text)
    pairs = [(s.title, tip) for s in sections for tip in _content_lines(s.lines)]
    return Target(
        kind="routine",
        path=path,
        label=f"the routine tips in {path.rsplit('/', 1)[-1]}",
        tips=_number(pairs),
        content_digest=_digest([text]),
        kept_lines=tuple(preamble),
    )


def _tacit_target(path: str, text: str) -> Target:
    kept: list[str] = []
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        bullet = bullet_text(line)
        if bullet is not None and words(bullet):
            pairs.append(("tacit knowledge", one_line(bullet)))
        elif bullet is None:
            kept.append(line)
    return Target(
        kind="tacit",
        path=path,
        label="the user's tacit knowledge (how they operate: preferences, style, rules)",
        tips=_number(pairs),
        content_digest=_digest([text]),
        kept_lines=tuple(kept),
    )


def build_request(target: Target, *, model: str) -> ToolRequest:
    tips = "\n".join(f"{tip.number} [{one_line(tip.topic)}] {tip.text}" for tip in target.tips)
    user = load_prompt("consolidate-user").render(
        what=target.label, limits=target.limits, nonce=fence_marker(tips), tips=tips
    )
    return ToolRequest(
        model=model,
        system=load_prompt("consolidate-system").text,
        tool=consolidate_tool(),
        user_content=user,
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


def check_answer(target: Target, answer: ConsolidateSkills) -> None:
    """Raise ConsolidationRefusedError when a tip is lost or a `from` names an unknown tip."""
    given = {tip.number for tip in target.tips}
    cited = {number.strip() for t in answer.topics for tip in t.tips for number in tip.from_}
    unknown = sorted(cited - given, key=_tip_order)
    if unknown:
        raise ConsolidationRefusedError(f"'from' names tips that were not given: {unknown}")
    missing = sorted(given - cited, key=_tip_order)
    if missing:
        raise ConsolidationRefusedError(f"tips in no 'from' (they would be lost): {missing}")
    for topic in answer.topics:
        if not words(topic.topic) or not all(words(tip.text) for tip in topic.tips):
            raise ConsolidationRefusedError("a topic or tip has no words")
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
    if _line_count(bounded) > MAX_LINES:
        raise ConsolidationRefusedError(
            f"{target.path} would still have {_line_count(bounded)} lines (at most {MAX_LINES})"
        )
    for path, text in sorted(files.items()):
        if text is None:
            tx.remove(path)
        elif tx.read_text(path) != text:
            tx.write_text(path, text)
    return sorted(files)


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
