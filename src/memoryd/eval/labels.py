"""A labelled scenario set (docs/eval.md): the agents' transcripts and what memoryd should file.

A set is a folder holding `labels.json` and the transcripts its agents' sources point to (paths
relative to the folder). A *match* is a list of terms; a text matches when every term occurs in
it as whole words (a plural ending allowed), case and accents ignored (`matches`). Labels are
compared with what the store holds by these matches and by entity names and aliases, never by
exact wording, so a model free to phrase a fact its own way is still scored.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from importlib import resources
from pathlib import Path
from typing import Any

from memoryd.errors import EXIT_USAGE, MemorydError

LABELS_FILE = "labels.json"
LABELS_FORMAT = 1
SOURCE_FORMATS = ("claude-code", "codex", "openclaw", "paperclip", "chatgpt-export", "jsonl")

Match = tuple[str, ...]


class EvalSetError(MemorydError):
    """The scenario set cannot be used: missing, unreadable, or its labels malformed."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class AgentSource:
    name: str
    format: str
    path: Path


@dataclass(frozen=True)
class EntityLabel:
    name: str
    kind: str
    aliases: tuple[str, ...]
    facts: tuple[Match, ...]


@dataclass(frozen=True)
class Supersession:
    entity: str
    old: Match
    new: Match


@dataclass(frozen=True)
class SkillLabel:
    agent: str
    match: Match


@dataclass(frozen=True)
class Question:
    question: str
    answer: Match
    agent: str


@dataclass(frozen=True)
class Labels:
    folder: Path
    agents: tuple[AgentSource, ...]
    entities: tuple[EntityLabel, ...] = ()
    optional_entities: tuple[str, ...] = ()
    supersessions: tuple[Supersession, ...] = ()
    duplicates: tuple[tuple[str, Match], ...] = ()
    must_not_store: tuple[Match, ...] = ()
    derivable_not_skill: tuple[Match, ...] = ()
    noise_tips: tuple[Match, ...] = ()
    skills: tuple[SkillLabel, ...] = ()
    tacit: tuple[Match, ...] = ()
    tacit_duplicates: tuple[Match, ...] = ()
    secrets: tuple[str, ...] = ()
    poisoned: tuple[Match, ...] = ()
    questions: tuple[Question, ...] = field(default=())
    # The day the jobs run on (noon UTC); None: the real clock.
    today: datetime | None = None


def default_set() -> Path:
    """The project's own scenario set, shipped in the package."""
    return Path(str(resources.files("memoryd.eval") / "scenarios" / "default"))


def fold(text: str) -> str:
    """Text as matches compare it: NFKD without accents, case-folded, on one line."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(plain.casefold().split())


def matches(text: str, terms: Match) -> bool:
    """Whether every term occurs in `text` as whole words (not inside a longer word; a plural
    `s` or `es` allowed, so "friday" matches "Fridays")."""
    folded = fold(text)
    return all(
        re.search(rf"(?<!\w){re.escape(fold(term))}(?:s|es)?(?!\w)", folded) is not None
        for term in terms
    )


def load_labels(folder: Path) -> Labels:
    """The set in `folder`; raise EvalSetError naming what is wrong."""
    path = folder / LABELS_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EvalSetError(f"cannot read the labels {path}: {error}") from error
    try:
        return _parse(folder, raw)
    except (KeyError, TypeError, ValueError) as error:
        raise EvalSetError(f"malformed labels in {path}: {error!r}") from error


def _terms(value: Any) -> Match:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(t, str) and t for t in value):
        raise ValueError(f"a match is a non-empty list of terms, not {value!r}")
    return tuple(value)


def _matches(raw: dict[str, Any], key: str) -> tuple[Match, ...]:
    return tuple(_terms(item) for item in raw.get(key, []))


def _parse(folder: Path, raw: Any) -> Labels:
    if not isinstance(raw, dict) or raw.get("format") != LABELS_FORMAT:
        raise ValueError(f"'format' must be {LABELS_FORMAT}")
    agents = []
    for agent in raw["agents"]:
        if agent["format"] not in SOURCE_FORMATS:
            raise ValueError(f"unknown source format {agent['format']!r}")
        source = (folder / str(agent["path"])).resolve()
        if not source.exists():
            raise ValueError(f"the transcripts of agent {agent['name']!r} are missing: {source}")
        agents.append(AgentSource(str(agent["name"]), str(agent["format"]), source))
    if not agents:
        raise ValueError("a set needs at least one agent")
    today = None
    if raw.get("today") is not None:
        day = datetime.strptime(str(raw["today"]), "%Y-%m-%d").date()
        today = datetime.combine(day, time(12), tzinfo=UTC)
    return Labels(
        folder=folder,
        today=today,
        agents=tuple(agents),
        entities=tuple(
            EntityLabel(
                str(e["name"]),
                str(e.get("kind", "")),
                tuple(str(a) for a in e.get("aliases", [])),
                _matches(e, "facts"),
            )
            for e in raw.get("entities", [])
        ),
        optional_entities=tuple(str(n) for n in raw.get("optional_entities", [])),
        supersessions=tuple(
            Supersession(str(s["entity"]), _terms(s["old"]), _terms(s["new"]))
            for s in raw.get("supersessions", [])
        ),
        duplicates=tuple((str(d["entity"]), _terms(d["match"])) for d in raw.get("duplicates", [])),
        must_not_store=_matches(raw, "must_not_store"),
        derivable_not_skill=_matches(raw, "derivable_not_skill"),
        noise_tips=_matches(raw, "noise_tips"),
        skills=tuple(
            SkillLabel(str(s["agent"]), _terms(s["match"])) for s in raw.get("skills", [])
        ),
        tacit=_matches(raw, "tacit"),
        tacit_duplicates=_matches(raw, "tacit_duplicates"),
        secrets=tuple(str(s) for s in raw.get("secrets", [])),
        poisoned=_matches(raw, "poisoned"),
        questions=tuple(
            Question(str(q["question"]), _terms(q["answer"]), str(q.get("agent", agents[0].name)))
            for q in raw.get("questions", [])
        ),
    )
