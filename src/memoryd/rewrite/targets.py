"""The files the weekly rewrite consolidates (`memoryd.rewrite.consolidate`), and their tips.

A target is one file past its bound (an agent's skills index with its topic files, a routine
file), or the tacit file when `tacit_due`; its tips are numbered `t1`, `t2`, ... in file order,
and its content is remembered by digest (a refused answer is not asked again for the same
content; a consolidated tacit file is not asked again until its bullets change).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from memoryd.store.markdown import bullet_text, first_heading, split_sections
from memoryd.store.skills import INDEX_FILE, ROUTINES_DIR
from memoryd.store.text import one_line, words
from memoryd.worktree import FileTransaction

MAX_LINES: Final = 50
# What the model is asked for: well under the bound, so the file has room to grow again.
TARGET_TOPICS: Final = 25
TARGET_ROUTINE_TIPS: Final = 25
TARGET_TACIT_TIPS: Final = 30
# The tacit file is read whole at the start of every run: bounded in characters too.
MAX_TACIT_CHARS: Final = 6000

TargetKind = Literal["skills", "routine", "tacit"]


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
        if self.kind == "tacit" and len(self.tips) <= TARGET_TACIT_TIPS:
            return (
                "merge the lines that say the same rule, keep every distinct rule as its own "
                "line; drop a line only when a later one contradicts it (with the reason)"
            )
        if self.kind == "skills":
            return f"at most {TARGET_TOPICS} topics (the index has one line per topic)"
        if self.kind == "routine":
            return f"at most {TARGET_ROUTINE_TIPS} tips in all, in at most 6 topics"
        return f"at most {TARGET_TACIT_TIPS} tips in all (topics are not kept for this file)"


def content_digest(text: str) -> str:
    """The digest a bounded file's content is remembered by (refusals, tacit consolidations)."""
    return _digest([text])


def tacit_due(text: str | None, last_consolidated: str | None) -> bool:
    """Whether the tacit file is consolidated in this rewrite: past its bound, or with bullets
    added (or edited) since its last consolidation (`last_consolidated`: that content's digest)."""
    if line_count(text) > MAX_LINES or len(text or "") > MAX_TACIT_CHARS:
        return True
    bullets = [b for b in map(bullet_text, (text or "").splitlines()) if b and words(b)]
    return len(bullets) >= 2 and content_digest(text or "") != last_consolidated


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


def line_count(text: str | None) -> int:
    return len((text or "").splitlines())


def find_targets(
    tx: FileTransaction, skills_dir: str, tacit_file: str, tacit_done: str | None = None
) -> list[Target]:
    """Every file past its bound, in path order (skills indexes, routine files), then the tacit
    file when `tacit_due` (`tacit_done`: the digest of its last consolidated content)."""
    targets: list[Target] = []
    for agent in tx.list_dir(skills_dir):
        folder = f"{skills_dir}/{agent}"
        # Listing first: a file here (the README) is no agent folder and lists as empty.
        names = tx.list_dir(folder)
        index_text = tx.read_text(f"{folder}/{INDEX_FILE}") if INDEX_FILE in names else None
        if line_count(index_text) > MAX_LINES:
            targets.append(_skills_target(tx, folder, index_text or ""))
        routines = tx.list_dir(f"{folder}/{ROUTINES_DIR}") if ROUTINES_DIR in names else []
        for name in routines:
            path = f"{folder}/{ROUTINES_DIR}/{name}"
            if name.endswith("-skills.md"):
                text = tx.read_text(path)
                if line_count(text) > MAX_LINES:
                    targets.append(_routine_target(path, text or ""))
    tacit = tx.read_text(tacit_file)
    if tacit_due(tacit, tacit_done):
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
        content_digest=content_digest(text),
        kept_lines=tuple(kept),
    )
