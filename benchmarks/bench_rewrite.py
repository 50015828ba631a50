"""Rewrite benchmark: the weekly selection pass on a large store, everything but the LLM.

What it measures: a store of 100,000 facts in 5,000 entities (`--scale 1`) is
generated once under `$TMPDIR/memoryd-bench/rewrite/` and reused by later runs (items.json and
entity.json written directly, in the store's own formats; no git history is needed to read it).
The store is a git repository of its own, outside any work tree: generated inside one (this
project's, say) `init_store` would commit its skeleton there. Then the selection pass (catalogue
load, tiers, change detection against the tracking in a real state database) is timed:

1. first pass, nothing tracked yet: every entity's facts are parsed and tiered;
2. nothing changed since: the fast path (items.json digest + next tier-change date);
3. a week later with 50 entities given a new fact: only the changed entities and those whose
   facts change tier that week are parsed, and exactly those are selected.

Target: each pass <= 5 s, and pass 3 touches only changed entities. The figures go to the
`## Rewrite` section of BENCHMARKS.md with the options that produced them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TypeVar

from benchmarks._report import write_section
from memoryd.gitrepo._repository import GitIdentity, GitStore, find_work_tree
from memoryd.rewrite.select import Selection, select, tracking_digest
from memoryd.state.facade import State
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.catalog import EntityCatalog
from memoryd.store.entities import Entity, render_metadata
from memoryd.store.items import Fact, FactSource, render_items
from memoryd.store.layout import init_store
from memoryd.store.tiers import TierRule
from memoryd.worktree import UnitOfWork

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "rewrite"
ENTITIES = 5000
FACTS_PER_ENTITY = 20
CHANGED = 50
TARGET_SECONDS = 5.0
TODAY = date(2026, 3, 10)
NOW = datetime(2026, 3, 10, 3, tzinfo=UTC)
RULE = TierRule()
SOURCE = FactSource(agent="ops", session="bench", file="/logs/bench.jsonl", lines=(1, 2))
_T = TypeVar("_T")


def generate(root: Path, entities: int) -> None:
    """Write (once) a store of `entities` people with FACTS_PER_ENTITY facts each."""
    marker = root / ".complete"
    if marker.exists() and marker.read_text() == f"{entities}\n":
        return
    if root.exists():
        shutil.rmtree(root)
    init_store(root, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    rng = random.Random(5)
    for number in range(entities):
        entity = Entity(name=f"Person {number}", kind="person", slug=f"person-{number}")
        folder = root / entity.folder
        folder.mkdir(parents=True)
        (folder / "entity.json").write_text(render_metadata(entity), encoding="utf-8")
        (folder / "summary.md").write_text(f"# {entity.name}\n", encoding="utf-8")
        facts = []
        for index in range(1, FACTS_PER_ENTITY + 1):
            # Ages spread over a year, skewed recent; some facts used often.
            age = int(rng.expovariate(1 / 40))
            last = TODAY - timedelta(days=age)
            facts.append(
                Fact(
                    id=f"{entity.slug}-{index:03d}",
                    fact=f"Fact {index} about {entity.name}: " + "lorem ipsum " * 6,
                    category="context",
                    timestamp=last,
                    status="active" if rng.random() > 0.1 else "superseded",
                    superseded_by=None,
                    related_entities=(),
                    last_accessed=last,
                    access_count=rng.choice((0, 0, 0, 1, 2, 5, 26)),
                    recorded_at=last,
                    source=SOURCE,
                )
            )
        (folder / "items.json").write_text(render_items(facts), encoding="utf-8")
    marker.write_text(f"{entities}\n")


def timed(action: Callable[[], _T]) -> tuple[float, _T]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def selection_pass(root: Path, state: State, today: date) -> Selection:
    """What a rewrite does before any LLM call: load the catalogue and tracking, select."""
    uow = UnitOfWork(GitStore(root, GitIdentity("memoryd", "memoryd@localhost"), None))
    catalog = EntityCatalog.load(uow)
    return select(uow, catalog.entities(), state.rewrites.all(), today=today, rule=RULE, mode="llm")


def record(state: State, selection: Selection) -> None:
    rows = list(selection.refreshed)
    for candidate in selection.changed:
        digest = tracking_digest("llm", candidate.items_digest, candidate.input.digest)
        rows.append(
            EntityRewrite(candidate.input.entity.ref, NOW, digest, candidate.input.next_change)
        )
    state.rewrites.record_many(rows)


def add_fact(root: Path, number: int) -> None:
    path = root / "life" / "areas" / "people" / f"person-{number}" / "items.json"
    facts = json.loads(path.read_text(encoding="utf-8"))
    fresh = dict(facts[-1])
    fresh.update(id=f"person-{number}-{len(facts) + 1:03d}", fact="A brand new fact")
    fresh.update(lastAccessed=TODAY.isoformat(), status="active", supersededBy=None)
    path.write_text(json.dumps([*facts, fresh], indent=2) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks rewrite")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 5,000 entities")
    options = parser.parse_args(argv)
    enclosing = find_work_tree(DATA)
    if enclosing is not None:
        print(
            f"{DATA} is inside the git work tree {enclosing}, which the benchmark's store would "
            "be committed into; set TMPDIR to a folder outside any git repository",
            file=sys.stderr,
        )
        return 2
    entities = max(10, int(ENTITIES * options.scale))
    root = DATA / f"store-{entities}"
    generated, _ = timed(lambda: generate(root, entities))
    state_dir = DATA / f"state-{entities}"
    shutil.rmtree(state_dir, ignore_errors=True)
    state_dir.mkdir(parents=True)
    # The generated store is reused between runs; the facts changed in pass 3 are undone here.
    for number in range(CHANGED):
        path = root / "life" / "areas" / "people" / f"person-{number * 97 % entities}"
        facts = json.loads((path / "items.json").read_text(encoding="utf-8"))
        if facts[-1]["fact"] == "A brand new fact":
            (path / "items.json").write_text(
                json.dumps(facts[:-1], indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
    with State.open(state_dir / "state.db") as state:
        first_s, first = timed(lambda: selection_pass(root, state, TODAY))
        record(state, first)
        idle_s, idle = timed(lambda: selection_pass(root, state, TODAY))
        changed = sorted({number * 97 % entities for number in range(CHANGED)})
        for number in changed:
            add_fact(root, number)
        passes = []
        for days in (1, 7):
            day = TODAY + timedelta(days=days)
            due = set(state.rewrites.due(day))
            seconds, selection = timed(lambda day=day: selection_pass(root, state, day))  # type: ignore[misc]
            passes.append((days, due, seconds, selection))
    rows = []
    notes = []
    touched_only_changed = True
    for days, due, seconds, selection in passes:
        expected = due | {f"people/person-{n}" for n in changed}
        exact = (
            selection.parsed == len(expected)
            and {c.input.entity.ref for c in selection.changed} <= expected
        )
        touched_only_changed = touched_only_changed and exact
        when = "the next day" if days == 1 else f"{days} days later"
        rows.append(
            f"| {when}, {len(changed)} entities with a new fact | {_fmt(seconds)} | "
            f"{selection.parsed:,} | {len(selection.changed):,} |"
        )
        notes.append(
            f"{when.capitalize()}: {len(due):,} entities had a fact changing tier (their stored "
            f"next tier-change date had come) and {len(changed)} a new fact, {len(expected):,} "
            f"in all; the pass parsed {selection.parsed:,} — "
            + ("**only those**." if exact else "**more than those**.")
        )
    facts = entities * FACTS_PER_ENTITY
    verdict = [s <= TARGET_SECONDS for s in (first_s, idle_s, *(p[2] for p in passes))]
    body = "\n".join(
        [
            f"Run: `python -m benchmarks rewrite -- --scale {options.scale:g}` on "
            f"{datetime.now(UTC).date().isoformat()}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs, files in the page cache. Store: {entities:,} entities, "
            f"{facts:,} facts (items.json ~{_size_mb(root):.0f} MB), generated in "
            f"{generated:.1f} s (0 when reused). A pass = catalogue load + tracking read from "
            "the state database + tiers + change detection; no LLM, no writes. Fact ages are "
            "spread over months, skewed recent, so many entities have a fact changing tier "
            "within a week.",
            "",
            "| pass | time (target <= 5 s) | entities parsed | selected |",
            "|---|---|---|---|",
            f"| first, nothing tracked | {_fmt(first_s)} | {first.parsed:,} | "
            f"{len(first.changed):,} |",
            f"| again, nothing changed | {_fmt(idle_s)} | {idle.parsed:,} | "
            f"{len(idle.changed):,} |",
            *rows,
            "",
            *[note + "\n" for note in notes],
            "Every other entity took the fast path: items.json read and hashed, not parsed. "
            "The pass with nothing changed is the fixed cost: loading the catalogue (every "
            "entity.json) and reading each items.json through the unit of work, whose path "
            "confinement lstat()s every component; facts are read by a lean reader of the "
            "fields a summary needs rather than the full items.json parser (about 2x faster).",
        ]
    )
    write_section("Rewrite", body)
    print(body)
    return 0 if all(verdict) and touched_only_changed else 1


def _fmt(seconds: float) -> str:
    mark = "ok" if seconds <= TARGET_SECONDS else "**missed**"
    return f"{seconds:.2f} s {mark}"


def _size_mb(root: Path) -> float:
    people = root / "life" / "areas" / "people"
    return sum(p.stat().st_size for p in people.glob("*/items.json")) / 1e6


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
