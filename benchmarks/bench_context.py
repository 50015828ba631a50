"""Context bundle size benchmark: what `memoryd context --budget 4000` prints for each hook
format, against the limit of the harness that loads it, and whether the bundle's tail survives.

The store is modest, the size a person's memory reaches in a few weeks: a `MEMORY.md` of about
6 KB, a dozen people with summaries and facts used this week, an agent's skills index, and a
week of daily notes. It is written under `$TMPDIR/memoryd-bench/context/` (outside any work
tree), dated from today because `context` reads the wall clock, and rebuilt on each run.

The limits are the harnesses' own: Claude Code hands a SessionStart hook's output to the model
whole only below 10,000 characters (above, a 2,000-character preview and a file path); Codex
moves hook context above 2,500 tokens out of the prompt (counted here as a tokenizer would at
worst for this text: one token per 3 ASCII characters, one per other character). Above the
limit the model is taken to see only the first 2,000 characters. For each format the benchmark
prints the characters (and those tokens) the model is given, whether they are within the limit,
and which of the bundle's sections the model sees: the last entity summary and today's note
are the tail that a cut loses first. A format the command does not know is reported as such.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memoryd.store.entities import Entity, render_metadata
from memoryd.store.items import Fact, FactSource, render_items
from memoryd.store.layout import init_store
from memoryd.store.notes import note_path
from memoryd.store.skills import INDEX_FILE

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "context"
ENTITIES = 12
FACTS_PER_ENTITY = 8
NOTE_DAYS = 7
HABITS = 40
PREVIEW_CHARS = 2000
LIMITS = {"claude-code": ("characters", 10_000), "codex": ("tokens", 2_500)}
# (format asked for, harness that loads it): the plain bundle is what hooks printed before the
# hook formats existed.
CASES = (
    ("plain", "claude-code"),
    ("plain", "codex"),
    ("claude-code", "claude-code"),
    ("codex", "codex"),
)
SOURCE = FactSource(agent="ops", session="bench", file="/logs/bench.jsonl", lines=(1, 2))


def worst_tokens(text: str) -> int:
    ascii_count = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_count / 3) + len(text) - ascii_count


def generate(root: Path, today: date) -> None:
    """Write the modest store (module docstring) afresh."""
    if root.exists():
        shutil.rmtree(root)
    store = root / "store"
    init_store(store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    habits = [
        f"- Habit {number}: prefers short answers, cites files by path, runs `make check` before "
        f"pushing, and asks before touching production database number {number}."
        for number in range(1, HABITS + 1)
    ]
    (store / "MEMORY.md").write_text("# How the user works\n\n" + "\n".join(habits) + "\n")
    skills = store / "agents" / "ops"
    skills.mkdir(parents=True, exist_ok=True)
    (skills / INDEX_FILE).write_text(
        "# Skills of ops\n\n"
        + "\n".join(f"- deploy step {n}: run `make deploy-{n}` then check logs" for n in range(12))
        + "\n"
    )
    for number in range(ENTITIES):
        entity = Entity(name=f"Person {number}", kind="person", slug=f"person-{number}")
        folder = store / entity.folder
        folder.mkdir(parents=True)
        (folder / "entity.json").write_text(render_metadata(entity), encoding="utf-8")
        facts = [
            Fact(
                id=f"{entity.slug}-{index:03d}",
                fact=f"Fact {index} about {entity.name}: works on project {index} with the team",
                category="context",
                timestamp=today - timedelta(days=index),
                status="active",
                superseded_by=None,
                related_entities=(),
                last_accessed=today - timedelta(days=index % 3),
                access_count=3,
                recorded_at=today - timedelta(days=index),
                source=SOURCE,
            )
            for index in range(1, FACTS_PER_ENTITY + 1)
        ]
        (folder / "items.json").write_text(render_items(facts), encoding="utf-8")
        cited = " ".join(
            f"{entity.name} works on project {fact.id[-1]} with the team [{fact.id}]."
            for fact in facts
        )
        (folder / "summary.md").write_text(f"# {entity.name}\n\n{cited}\n", encoding="utf-8")
    for back in range(NOTE_DAYS):
        day = today - timedelta(days=back)
        path = store / note_path(day)
        path.parent.mkdir(parents=True, exist_ok=True)
        entries = "\n".join(
            f"- {hour:02d}:00 met Person {hour % ENTITIES} about the launch of project {hour}"
            for hour in range(8, 20)
        )
        path.write_text(f"# {day.isoformat()}\n\n{entries}\n")
    (root / "logs").mkdir()
    (root / "memoryd.toml").write_text(
        '[store]\npath = "store"\n[state]\npath = "state"\n[llm]\nprovider = "markers"\n'
        '[[agents]]\nname = "ops"\n  [[agents.sources]]\n  format = "jsonl"\n  path = "logs"\n'
    )


def run_context(root: Path, output_format: str, budget: int) -> tuple[int, str]:
    command = [sys.executable, "-m", "memoryd", "--config", str(root / "memoryd.toml")]
    command += ["context", "--agent", "ops", "--budget", str(budget)]
    if output_format != "plain":
        command += ["--format", output_format]
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    done = subprocess.run(
        command, capture_output=True, text=True, env=environ, cwd=root, check=False
    )
    return done.returncode, done.stdout


def seen_by_model(output_format: str, stdout: str) -> str:
    """What the model is given: the hook's context (Codex: the JSON's additionalContext)."""
    if output_format == "codex" and stdout.lstrip().startswith("{"):
        return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"])
    return stdout


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks context")
    parser.add_argument("--budget", type=int, default=4000)
    options = parser.parse_args(argv)
    today = datetime.now(UTC).date()
    generate(DATA, today)
    print(
        f"store: {ENTITIES} entities, MEMORY.md {len((DATA / 'store/MEMORY.md').read_text())} "
        f"chars, {NOTE_DAYS} daily notes; context --budget {options.budget}"
    )
    last_entity = f"(life/areas/people/person-{ENTITIES - 1}/summary.md)"
    for output_format, harness in CASES:
        unit, limit = LIMITS[harness]
        code, stdout = run_context(DATA, output_format, options.budget)
        label = f"{output_format} -> {harness}"
        if code != 0:
            print(f"{label:26} exit {code}: format not supported")
            continue
        text = seen_by_model(output_format, stdout)
        chars, tokens = len(text), worst_tokens(text)
        within = (chars if unit == "characters" else tokens) < limit
        model_sees = text if within else text[:PREVIEW_CHARS]
        sections = model_sees.count("\n## ")
        entities = model_sees.count("## Person ")
        habits = model_sees.count("- Habit ")
        print(
            f"{label:26} {chars:6} chars {tokens:5} tokens(worst), limit {limit:6} {unit:10} "
            f"{'within' if within else 'OVER':6} sections seen {sections:2}, entities "
            f"{entities:2}/{ENTITIES}, MEMORY.md lines {habits:2}/{HABITS}, "
            f"last entity {'yes' if last_entity in model_sees else 'no':3} "
            f"today's note {'yes' if note_path(today) in model_sees else 'no'}"
        )
    return 0
