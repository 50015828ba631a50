"""The `dense` corpus of the pay-once bench, and the model that answers it as a strong one would.

The same few people and projects as `shared`, but every fact states one of a handful of slots of
its entity ("release moved to {day}", "is on call for {project} this week") with a value from a
short list, as a fleet restating and updating the same project status does. So two facts of one
entity often share half their content words or more, the overlap at which memoryd asks again
(`heartbeat/reconcile.py`):

- an update (a slot's new value: "release moved to Monday" after "... to Friday") must supersede
  the fact it replaces, which the model can do only if its context shows that fact;
- a restatement (a slot's current value said again) must be left out;
- two slots of one entity may share half their words without one replacing the other ("release
  moved to Friday" and "release freeze moved to Thursday").

`answer` files a chunk's `remember:` lines the way a strong model given the request's context
would: it leaves out a line the context shows word for word, and supersedes every shown fact of
the same entity and slot. `Asked` keeps, per chunk, the contexts it was asked with, so that a
chunk asked twice can be told apart by what the later context showed that the first did not
(`reasons`).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.fake_anthropic import RecordedRequest, ToolUse

from benchmarks.bench_heartbeat import FENCE, REMEMBER, user_text
from memoryd.store.text import words

PEOPLE = ("Dana Whitfield", "Omar Castell", "Priya Natarajan", "Lena Vogt")
PROJECTS = ("Orion", "Bluebird", "Kestrel")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
PROJECT_SLOTS: dict[str, tuple[str, ...]] = {
    "release moved to {}": DAYS,
    "release freeze moved to {}": DAYS,
    "staging cluster is {}": ("green", "red", "frozen"),
    "release owner is {}": tuple(name.split(" ")[0] for name in PEOPLE),
    "billing migration is {} percent done": ("20", "40", "60", "80"),
}
PERSON_SLOTS: dict[str, tuple[str, ...]] = {
    "is on call for {} this week": PROJECTS,
    "works from the {} office": ("Berlin", "Lisbon", "Austin"),
    "is on leave until {}": DAYS,
    "reviews the {} release": PROJECTS,
}
# The reasons a chunk was asked again (`Asked.reasons`), each followed by " | " and the slot.
UPDATE = {
    True: "another value of its slot filed meanwhile; the first context showed an older one",
    False: "another value of its slot filed meanwhile; the first context showed none",
}
OTHER_SLOT = "a fact of another slot sharing half its content words filed meanwhile"
RESTATED_MEANWHILE = "the same statement filed meanwhile"
NOTHING = "none of these"
RESTATED = 0.2  # share of lines that say a slot's current value again
_SLOTS = {**PROJECT_SLOTS, **PERSON_SLOTS}
_PATTERNS = {
    slot: re.compile("^" + re.escape(slot).replace(r"\{\}", "(.+)") + "$") for slot in _SLOTS
}
_STOP = frozenset(("to", "is", "the", "for", "this", "from", "on"))
_HEADER = re.compile(r"^\S+: (.+), (\w+)(?: \(also: .*\))?$")
_FACT = re.compile(r"^ {2}(\S+?)(?: \(true from [^)]*\))?: (.+)$")


def slot_of(fact: str) -> str | None:
    """The slot a statement fills ("release moved to {}"), or None."""
    return next((slot for slot, pattern in _PATTERNS.items() if pattern.match(fact)), None)


def conversation_lines(rng: random.Random, current: dict[tuple[str, str], str]) -> list[str]:
    """One person line and one project line; `current` holds each (entity, slot)'s last value
    said, and is updated."""
    lines = []
    for kind, names, slots in (
        ("person", PEOPLE, PERSON_SLOTS),
        ("project", PROJECTS, PROJECT_SLOTS),
    ):
        name = rng.choice(names)
        slot = rng.choice(sorted(slots))
        said = current.get((name, slot))
        if said is not None and rng.random() < RESTATED:
            value = said  # a restatement of what stands
        else:
            value = rng.choice([v for v in slots[slot] if v != said])
        current[(name, slot)] = value
        lines.append(f"remember: {kind} {name}: {slot.format(value)}")
    return lines


def context_facts(text: str) -> dict[str, dict[str, str]]:
    """The facts a request's context shows, by entity name: {fact id: statement}."""
    shown: dict[str, dict[str, str]] = {}
    start = text.find("Known entities named in this excerpt")
    end = text.find("Tacit knowledge already filed", start)
    entity: str | None = None
    for line in text[start:end].splitlines()[1:]:
        if (fact := _FACT.match(line)) and entity is not None:
            shown[entity][fact.group(1)] = fact.group(2)
        elif header := _HEADER.match(line):
            entity = header.group(1)
            shown.setdefault(entity, {})
        else:
            entity = None
    return shown


def answer(request: RecordedRequest, delay: float) -> ToolUse:
    """What a strong model files for the request's `remember:` lines, after `delay` seconds."""
    text = user_text(request)
    shown = context_facts(text)
    facts: list[dict[str, Any]] = []
    entities: list[dict[str, Any]] = []
    for _nonce, section, body, _end in FENCE.findall(text):
        for kind, name, statement in REMEMBER.findall(body):
            entities.append({"name": name, "kind": kind, "significant": True})
            known = shown.get(name, {})
            if statement in known.values():
                continue  # said already: nothing to file
            slot = slot_of(statement)
            replaced = [i for i, old in known.items() if slot is not None and slot_of(old) == slot]
            filed: dict[str, Any] = {
                "entity": {"name": name, "kind": kind},
                "fact": statement,
                "category": "status",
                "supersedes": sorted(replaced),
            }
            if section:
                filed["section"] = section.strip()
            facts.append(filed)
    return ToolUse({"facts": facts, "entities": entities}, delay_seconds=delay)


@dataclass
class Asked:
    """The contexts each chunk (its fenced transcript) was asked with, in order."""

    contexts: dict[str, list[dict[str, dict[str, str]]]] = field(default_factory=dict)

    def record(self, request: RecordedRequest) -> None:
        text = user_text(request)
        for _nonce, _section, body, _end in FENCE.findall(text):
            self.contexts.setdefault(body, []).append(context_facts(text))

    def left_out(self) -> set[str]:
        """The lines (`entity: statement`, after a digest of the chunk) the last answer of each
        chunk left out because its context showed them: what a strong model does not file."""
        return {
            f"{hashlib.sha256(body.encode()).hexdigest()[:8]} {name}: {statement}"
            for body, asked in self.contexts.items()
            for _kind, name, statement in REMEMBER.findall(body)
            if statement in asked[-1].get(name, {}).values()
        }

    def reasons(self) -> dict[str, int]:
        """Calls beyond the first of each chunk, counted by what the last context showed that
        the first did not, for the chunk's own lines, the first of: another value of one of its
        slots (the answer had to supersede it; its first context showed an older value of that
        slot, or none), a fact of another slot sharing half the content
        words of one of its lines (reconcile's rule), one of its lines word for word (reconcile
        drops it), or none of these."""
        counted: Counter[str] = Counter()
        for body, asked in self.contexts.items():
            if len(asked) < 2:
                continue
            first, last = asked[0], asked[-1]
            found: list[tuple[int, str]] = []
            for _kind, name, statement in REMEMBER.findall(body):
                new = [s for i, s in last.get(name, {}).items() if i not in first.get(name, {})]
                slot = slot_of(statement)
                for other in new:
                    if other == statement:
                        found.append((3, f"{RESTATED_MEANWHILE} | '{slot}'"))
                    elif slot_of(other) == slot:
                        older = any(slot_of(f) == slot for f in first.get(name, {}).values())
                        found.append((0 if older else 1, f"{UPDATE[older]} | '{slot}'"))
                    elif _overlap(statement, other, name):
                        found.append((2, f"{OTHER_SLOT} | '{slot}' after '{slot_of(other)}'"))
            reason = min(found)[1] if found else f"{NOTHING} | -"
            counted[reason] += len(asked) - 1
        return dict(counted.most_common())


def _overlap(new: str, old: str, name: str) -> bool:
    """Half the content words of the shorter statement in common, as `heartbeat/reconcile.py`
    counts them (these slots use only the stop words listed here)."""
    own = set(words(name))
    a, b = ({w for w in words(t) if w not in _STOP | own and len(w) > 1} for t in (new, old))
    return bool(a and b) and len(a & b) >= 0.5 * min(len(a), len(b))


def active_differences(reference: dict[str, str], stored: dict[str, str]) -> list[str]:
    """The active facts one store holds and the other not ("+" stored only, "-" reference
    only): where two stores that differ disagree on what is true now, not only on history."""
    held = [
        {
            f"{path}: {fact['fact']}"
            for path, text in tree.items()
            if path.endswith("items.json")
            for fact in json.loads(text)
            if fact.get("status") == "active"
        }
        for tree in (reference, stored)
    ]
    return sorted(f"+ {f}" for f in held[1] - held[0]) + sorted(f"- {f}" for f in held[0] - held[1])
