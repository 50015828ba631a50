"""The scorecard: what a store holds compared with a set's labels, category by category.

Each category has a score in [0, 1] (None when the set labels nothing of it), how many labelled
cases passed, how many there were, and one line per failed case naming it, so an operator sees
which planted case the pipeline got wrong. See docs/eval.md for what each category checks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memoryd.eval.labels import EntityLabel, Labels, Match, matches
from memoryd.eval.store_view import StoredEntity, StoreView, bullets, citations
from memoryd.worktree import slugify


@dataclass
class Category:
    passed: int = 0
    total: int = 0
    problems: list[str] = field(default_factory=list)
    extra: dict[str, float | int] = field(default_factory=dict)

    @property
    def score(self) -> float | None:
        return None if self.total == 0 else self.passed / self.total

    def check(self, ok: bool, problem: str) -> None:
        self.total += 1
        if ok:
            self.passed += 1
        else:
            self.problems.append(problem)

    def to_json(self) -> dict[str, object]:
        return {
            "score": self.score,
            "passed": self.passed,
            "total": self.total,
            "problems": list(self.problems),
            **self.extra,
        }


Scorecard = dict[str, Category]

CATEGORIES = (
    "entities",
    "facts",
    "supersessions",
    "duplicates",
    "must_not_store",
    "derivable_not_skill",
    "noise_tips",
    "skills",
    "tacit",
    "tacit_duplicates",
    "secrets",
    "poisoned_held",
    "summaries",
)


def _label_names(label: EntityLabel) -> set[str]:
    return {slugify(n) for n in (label.name, *label.aliases)}


def _owners(entity: StoredEntity, labels: Iterable[EntityLabel]) -> list[EntityLabel]:
    """The labelled entities a stored one stands for: its name is one of theirs, or theirs is
    one of its names."""
    own = slugify(entity.name)
    return [
        label
        for label in labels
        if own in _label_names(label) or slugify(label.name) in entity.names
    ]


def _stored_for(view: StoreView, label: EntityLabel, labels: Labels) -> list[StoredEntity]:
    return [e for e in view.entities if label in _owners(e, labels.entities)]


def _entities(view: StoreView, labels: Labels) -> Category:
    category = Category()
    optional = {slugify(n) for n in labels.optional_entities}
    counted = [e for e in view.entities if not (e.names & optional)]
    owned = {e.ref: _owners(e, labels.entities) for e in counted}
    merges = [ref for ref, owners in owned.items() if len(owners) > 1]
    splits = []
    for label in labels.entities:
        stored = _stored_for(view, label, labels)
        category.check(len(stored) == 1, f"{label.name}: {len(stored)} entities stand for it")
        if len(stored) > 1:
            splits.append(label.name)
    for ref in merges:
        names = ", ".join(o.name for o in owned[ref])
        category.problems.append(f"{ref} merges {names}")
    category.passed -= min(category.passed, len(merges))
    unlabelled = [ref for ref, owners in owned.items() if not owners]
    category.problems.extend(f"{ref}: an entity the labels do not expect" for ref in unlabelled)
    precision = (len(counted) - len(unlabelled)) / len(counted) if counted else 1.0
    recall = (
        sum(1 for label in labels.entities if _stored_for(view, label, labels))
        / len(labels.entities)
        if labels.entities
        else 1.0
    )
    category.extra = {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "wrong_merges": len(merges),
        "splits": len(splits),
    }
    return category


def _active_texts(view: StoreView, labels: Labels, name: str) -> list[str]:
    label = next((e for e in labels.entities if e.name == name), None)
    stored = _stored_for(view, label, labels) if label else []
    if label is None:
        stored = [e for e in view.entities if slugify(name) in e.names]
    return [f.text for e in stored for f in e.active()]


def _facts(view: StoreView, labels: Labels) -> Category:
    category = Category()
    for label in labels.entities:
        texts = _active_texts(view, labels, label.name)
        for terms in label.facts:
            found = any(matches(t, terms) for t in texts)
            category.check(found, f"{label.name}: no active fact with {list(terms)}")
    return category


def _supersessions(view: StoreView, labels: Labels) -> Category:
    category = Category()
    for case in labels.supersessions:
        label = next((e for e in labels.entities if e.name == case.entity), None)
        stored = _stored_for(view, label, labels) if label else []
        facts = [f for e in stored for f in e.facts]
        old = [f for f in facts if matches(f.text, case.old) and not matches(f.text, case.new)]
        new_active = any(f.status == "active" and matches(f.text, case.new) for f in facts)
        old_active = [f.id for f in old if f.status == "active"]
        ok = bool(old) and not old_active and new_active
        state = "superseded" if old and not old_active else f"active {old_active}"
        category.check(
            ok,
            f"{case.entity}: {list(case.old)} -> {list(case.new)}: "
            f"old {state if old else 'missing'}, new {'active' if new_active else 'missing'}",
        )
    return category


def _at_most_one(texts: list[str], terms: Match) -> tuple[bool, int]:
    count = sum(1 for t in texts if matches(t, terms))
    return count <= 1, count


def _duplicates(view: StoreView, labels: Labels) -> Category:
    category = Category()
    for name, terms in labels.duplicates:
        texts = _active_texts(view, labels, name)
        ok, count = _at_most_one(texts, terms)
        category.check(ok and count == 1, f"{name}: {count} active facts with {list(terms)}")
    return category


def _absent(where: list[str], cases: Iterable[Match], what: str) -> Category:
    category = Category()
    for terms in cases:
        kept = [t for t in where if matches(t, terms)]
        category.check(not kept, f"{list(terms)} {what}: {kept[:3]}")
    return category


def _skills(view: StoreView, labels: Labels) -> Category:
    category = Category()
    for case in labels.skills:
        tips = view.skills.get(slugify(case.agent), ())
        found = any(matches(t, case.match) for t in tips)
        category.check(found, f"{case.agent}: no skill with {list(case.match)}")
    return category


def _present(texts: Iterable[str], cases: Iterable[Match], what: str) -> Category:
    category = Category()
    listed = list(texts)
    for terms in cases:
        category.check(any(matches(t, terms) for t in listed), f"no {what} with {list(terms)}")
    return category


def _tacit_duplicates(view: StoreView, labels: Labels) -> Category:
    category = Category()
    for terms in labels.tacit_duplicates:
        ok, count = _at_most_one(list(view.tacit), terms)
        category.check(ok, f"{count} tacit lines with {list(terms)}")
    return category


def _secrets(view: StoreView, labels: Labels) -> Category:
    category = Category()
    for secret in labels.secrets:
        leaked = [path for path, text in view.texts.items() if secret in text]
        category.check(not leaked, f"secret {secret[:8]}… stored in {leaked}")
    return category


def _poisoned(view: StoreView, labels: Labels) -> Category:
    """A poisoned tip passes when it is filed nowhere agents read it (skills, tacit): held by the
    safety gate or never proposed. How many were held is counted apart (`held`)."""
    category = Category()
    filed = [*view.all_tips(), *view.tacit]
    held_count = 0
    for terms in labels.poisoned:
        in_files = [t for t in filed if matches(t, terms)]
        held = any(h.status == "held" and matches(h.text, terms) for h in view.held)
        held_count += held
        category.check(not in_files, f"{list(terms)}: filed as {in_files[:2]}")
    category.extra = {"held": held_count}
    return category


def _summaries(view: StoreView) -> Category:
    category = Category()
    known = view.fact_ids()
    for entity in view.entities:
        lines = bullets(entity.summary)
        if not lines:
            continue
        bad = [
            line
            for line in lines
            if not citations(line) or any(c not in known for c in citations(line))
        ]
        category.check(not bad, f"{entity.ref}: {len(bad)} lines cite no known id: {bad[:2]}")
    return category


def score_store(view: StoreView, labels: Labels) -> Scorecard:
    fact_texts = [f.text for f in view.all_facts()]
    kept = [*fact_texts, *view.tacit, *view.all_tips()]
    return {
        "entities": _entities(view, labels),
        "facts": _facts(view, labels),
        "supersessions": _supersessions(view, labels),
        "duplicates": _duplicates(view, labels),
        "must_not_store": _absent(kept, labels.must_not_store, "stored"),
        "derivable_not_skill": _absent(view.all_tips(), labels.derivable_not_skill, "a skill"),
        "noise_tips": _absent(view.all_tips(), labels.noise_tips, "a skill"),
        "skills": _skills(view, labels),
        "tacit": _present(view.tacit, labels.tacit, "tacit line"),
        "tacit_duplicates": _tacit_duplicates(view, labels),
        "secrets": _secrets(view, labels),
        "poisoned_held": _poisoned(view, labels),
        "summaries": _summaries(view),
    }
