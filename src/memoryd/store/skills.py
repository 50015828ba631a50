"""Agent skills (docs/store-format.md): tier-1 topic files with their index, and tier-2 routine
files.

Layout below the skills folder (config `store.skills_dir`, default `agents`):

- `<agent>/<topic>.md`: one topic, `# Topic` then one bullet per tip;
- `<agent>/skills-index.md`: one line per topic, `- [Topic](topic.md): gist`, the gist being the
  topic's first tip;
- `<agent>/routines/<routine>-skills.md`: the tips of one routine, in `## Topic` sections.

Agent, routine and topic names are slugified by memoryd: no path is ever taken from input. A tip
is never stored twice in one file (compared with `normalize_statement`).

A tip's topic joins an existing topic instead of starting a near-duplicate one when, in this
order: the two slugs are equal; their words are equal (accents, case, punctuation ignored) or
equal once run together ("fail-2ban", "e-mail"); or the words of one are a subset of the
other's ("fail2ban" and "fail2ban jails"). Among several
candidates the earliest rule wins, then the most words in common, then the smallest slug. The
rule is deliberately simple: a stray merge costs little, and the weekly consolidation rewrites
the topics anyway. The index may grow past 50 lines in between; consolidation brings it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from memoryd.errors import StoreError
from memoryd.store.markdown import (
    Section,
    bullet_text,
    first_heading,
    join_sections,
    split_sections,
)
from memoryd.store.text import clip, normalize_statement, one_line, words
from memoryd.worktree import FileTransaction, slugify

INDEX_FILE: Final = "skills-index.md"
ROUTINES_DIR: Final = "routines"
TOPIC_NAME_LENGTH: Final = 120
GIST_LENGTH: Final = 120
# Slugs a topic file may not take because the agent's folder already uses the name.
_TOPIC_SLUGS_IN_USE: Final = frozenset({"skills-index"})


class InvalidSkillError(StoreError):
    """A skill that cannot be filed as given (a topic or tip without any letter or digit)."""


@dataclass(frozen=True)
class SkillOutcome:
    path: str  # the file the tip belongs to
    topic: str  # the topic it was filed under (an existing topic's name when merged)
    added: bool  # False when the file already had the tip
    new_topic: bool  # True when the tip started a new topic
    tip: str = ""  # the tip as filed (cleaned), which its provenance is recorded under


@dataclass(frozen=True)
class Topic:
    """An existing topic: its file's slug and its display name (the file's heading)."""

    slug: str
    name: str


def agent_folder(skills_dir: str, agent: str) -> str:
    """Store-relative folder of an agent's skills."""
    return f"{skills_dir}/{slugify(agent)}"


def topic_slug(topic: str) -> str:
    slug = slugify(topic)
    return f"{slug}-topic" if slug in _TOPIC_SLUGS_IN_USE else slug


def _clean(text: str, what: str) -> str:
    cleaned = one_line(text)
    cleaned = one_line(bullet_text(cleaned) or cleaned)
    if not words(cleaned):
        raise InvalidSkillError(f"{what} {text[:80]!r} has no letter or digit")
    return cleaned


def match_topic(topic: str, existing: Iterable[Topic]) -> Topic | None:
    """The existing topic that `topic` should join, by the rule in the module docstring."""
    slug, topic_words = topic_slug(topic), set(words(topic))
    run_together = "".join(words(topic))
    best: tuple[int, int, str] | None = None
    chosen = None
    for candidate in existing:
        candidate_words = set(words(candidate.name)) | set(candidate.slug.split("-"))
        if candidate.slug == slug:
            rank = 0
        elif candidate_words == topic_words or "".join(words(candidate.name)) == run_together:
            rank = 1
        elif topic_words <= candidate_words or candidate_words <= topic_words:
            rank = 2
        else:
            continue
        key = (rank, -len(topic_words & candidate_words), candidate.slug)
        if best is None or key < best:
            best, chosen = key, candidate
    return chosen


def add_skill(
    tx: FileTransaction, skills_dir: str, *, agent: str, topic: str, tip: str
) -> SkillOutcome:
    """File a tier-1 tip of `agent` under `topic` (or the existing topic it near-duplicates),
    keeping the agent's skills index in step. Raise InvalidSkillError for an empty topic or tip."""
    name = clip(_clean(topic, "skill topic"), TOPIC_NAME_LENGTH)
    cleaned_tip = _clean(tip, "skill tip")
    folder = agent_folder(skills_dir, agent)
    topics = _topics(tx, folder)
    match = match_topic(name, topics)
    target = match or Topic(topic_slug(name), name)
    path = f"{folder}/{target.slug}.md"
    text = tx.read_text(path)
    if text is None:
        text = f"# {target.name}\n"
    known = {normalize_statement(b) for b in map(bullet_text, text.splitlines()) if b is not None}
    added = normalize_statement(cleaned_tip) not in known
    if added:
        tx.write_text(path, _append_bullet(text, cleaned_tip))
    _index_topic(tx, folder, target, cleaned_tip)
    return SkillOutcome(path, target.name, added=added, new_topic=match is None, tip=cleaned_tip)


def add_routine_skill(
    tx: FileTransaction, skills_dir: str, *, agent: str, routine: str, topic: str, tip: str
) -> SkillOutcome:
    """File a tier-2 tip in the routine file of `routine` (its name comes from the config),
    under the `## Topic` section it belongs to by the near-duplicate rule."""
    name = clip(_clean(topic, "skill topic"), TOPIC_NAME_LENGTH)
    cleaned_tip = _clean(tip, "skill tip")
    routine_name = one_line(routine)
    path = f"{agent_folder(skills_dir, agent)}/{ROUTINES_DIR}/{slugify(routine)}-skills.md"
    text = tx.read_text(path)
    if text is None:
        text = (
            f"# Routine skills: {routine_name}\n\n"
            f"Tactical tips for the routine {routine_name} of {one_line(agent)}, "
            "filed by memoryd.\n"
        )
    preamble, sections = split_sections(text)
    known = {
        normalize_statement(b)
        for section in sections
        for b in map(bullet_text, section.lines)
        if b is not None
    }
    by_slug = {topic_slug(section.title): section for section in sections}
    match = match_topic(name, [Topic(slug, s.title) for slug, s in sorted(by_slug.items())])
    section = by_slug[match.slug] if match else Section(name)
    if normalize_statement(cleaned_tip) in known:
        return SkillOutcome(path, section.title, added=False, new_topic=False, tip=cleaned_tip)
    if match is None:
        sections.append(section)
    last_bullet = max(
        (i for i, line in enumerate(section.lines) if bullet_text(line) is not None), default=-1
    )
    position = last_bullet + 1 if last_bullet >= 0 else len(section.lines)
    if last_bullet < 0 and section.lines and section.lines[-1].strip():
        section.lines.append("")
        position += 1
    section.lines.insert(position, f"- {cleaned_tip}")
    tx.write_text(path, join_sections(preamble, sections))
    return SkillOutcome(path, section.title, added=True, new_topic=match is None, tip=cleaned_tip)


def _topics(tx: FileTransaction, folder: str) -> list[Topic]:
    topics = []
    for entry in tx.list_dir(folder):
        if not entry.endswith(".md") or entry == INDEX_FILE or entry.startswith("."):
            continue
        slug = entry.removesuffix(".md")
        heading = first_heading(tx.read_text(f"{folder}/{entry}") or "")
        topics.append(Topic(slug, heading or slug))
    return topics


def _append_bullet(text: str, item: str) -> str:
    text = text.rstrip("\n") + "\n"
    if bullet_text(text.rstrip("\n").splitlines()[-1]) is None:
        text += "\n"  # a list right after a heading or paragraph needs a blank line
    return f"{text}- {item}\n"


def _index_topic(tx: FileTransaction, folder: str, topic: Topic, tip: str) -> None:
    """Make sure the index has a line for `topic`; lines already there are left as written."""
    path = f"{folder}/{INDEX_FILE}"
    text = tx.read_text(path)
    if text is None:
        text = (
            f"# Skills of {folder.rsplit('/', 1)[-1]}\n\n"
            "One line per topic; the tips are in each topic's file.\n"
        )
    link = f"]({topic.slug}.md)"
    if any(link in line for line in text.splitlines()):
        return
    label = topic.name.replace("[", "(").replace("]", ")")
    tx.write_text(
        path, _append_bullet(text, f"[{label}]({topic.slug}.md): {clip(tip, GIST_LENGTH)}")
    )
