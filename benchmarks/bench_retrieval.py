"""Retrieval benchmark: does `memoryd search` find what a question asks for? No LLM.

(a) Labelled questions over memoryd's own store. The bench writes a store under
`$TMPDIR/memoryd-bench/retrieval/` with the store's own writers (`render_items`,
`render_metadata`, `add_timeline`, `add_tacit`, `summary_file(render_template(...))`): six
entities with facts, twelve days of daily notes (the conversations' turns as timeline entries,
under memoryd's own note header), MEMORY.md and template summaries citing the facts. Each
question names the fact that answers it and a short answer. Measured over `SearchIndex.search`:
recall@5 (the fact, or a summary line citing it, in the top 5), MRR, and answer containment@10
(the normalised answer in the top 10 hits' texts and dates). Beside it, a plain BM25 baseline:
SQLite FTS5 `bm25()` over the raw conversation turns (unicode61, no stemming, any word).

(b) LoCoMo (`../shared/fixtures/locomo/`, skipped when absent): each conversation's sessions are
filed as daily notes dated by the session's date (`add_timeline`, one entry per turn at the
session's time, agent = speaker, text = "speaker: turn"); each QA question but the adversarial
ones (category 5) is asked through memoryd's search, top 10. Measured: answer containment@10
(normalised answer within the top 10 texts plus each hit's date, written "8 May 2023") and
evidence@10 (a turn LoCoMo cites as evidence is among the top 10), against plain BM25 over the
raw turns.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path

from benchmarks._retrieval_data import ENTITIES, QUESTIONS, TODAY, TRANSCRIPT, Item, Question
from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.search import SearchIndex
from memoryd.store.entities import Entity, render_metadata
from memoryd.store.items import Fact, FactSource, render_items
from memoryd.store.notes import TimelineEntry, add_timeline
from memoryd.store.summaries import render_template, summary_file, summary_input
from memoryd.store.tacit import add_tacit
from memoryd.store.tiers import TierRule

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "retrieval"
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "locomo"
RULE = TierRule()
SOURCE = FactSource(agent="ops", session="bench", file="/logs/bench.jsonl", lines=(1, 2))
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_WORD = re.compile(r"\w+", re.UNICODE)


class DirectStore(ReadOnlyStore):
    """The store's files written straight to disk (no git): the bench's `FileTransaction`."""

    def write_text(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def normalise(text: str) -> str:
    lowered = re.sub(r"[^\w\s]", " ", text.lower())
    return " ".join(_ARTICLES.sub(" ", lowered).split())


def spoken_date(day: date) -> str:
    return f"{day.isoformat()} {day.day} {day.strftime('%B')} {day.year}"


@dataclass(frozen=True)
class Result:
    text: str  # what the reader is shown: the hit's text and its date when it has one
    ids: frozenset[str]  # fact ids or dialogue ids it stands for


def hit_results(hits: Iterable[object]) -> list[Result]:
    results = []
    for hit in hits:
        text = str(getattr(hit, "text", ""))
        day = getattr(hit, "date", None)
        if isinstance(day, str) and day:
            text += " " + spoken_date(date.fromisoformat(day))
        cited = set(re.findall(r"\[([a-z0-9-]+-\d{3,})\]", text))
        results.append(Result(text, frozenset({str(getattr(hit, "id", "")), *cited})))
    return results


def bm25_baseline(turns: Sequence[tuple[str, str]]) -> Callable[[str, int], list[Result]]:
    """Plain BM25 over raw turns (id, text): FTS5, unicode61 without stemming, any word."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, text, tokenize='unicode61')")
    db.executemany("INSERT INTO t(id, text) VALUES (?, ?)", turns)

    def ask(question: str, limit: int) -> list[Result]:
        words = _WORD.findall(question)
        if not words:
            return []
        match = " OR ".join(f'"{word}"' for word in words)
        rows = db.execute(
            "SELECT id, text FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, limit)
        )
        return [Result(text, frozenset({id_})) for id_, text in rows]

    return ask


def memoryd_search(store: Path) -> Callable[[str, int], list[Result]]:
    state = store.parent / "state"
    shutil.rmtree(state, ignore_errors=True)

    def ask(question: str, limit: int) -> list[Result]:
        with SearchIndex.open(state, store) as index:
            index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
            hits = index.search(question, today=TODAY, rule=RULE, limit=limit)
        return hit_results(hits)

    return ask


# -- (a) the project's own questions ---------------------------------------------------------


def build_own_store(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    tx = DirectStore(root)
    for slug, (name, kind, items) in ENTITIES.items():
        entity = Entity(name=name, kind=kind, slug=slug)
        tx.write_text(f"{entity.folder}/entity.json", render_metadata(entity))
        facts = [_fact(slug, number, item) for number, item in enumerate(items, start=1)]
        tx.write_text(entity.items_path, render_items(facts))
        body = render_template(summary_input(entity, facts, TODAY, RULE))
        tx.write_text(f"{entity.folder}/summary.md", summary_file(name, body))
    by_day: dict[date, list[TimelineEntry]] = {}
    for day, hour, speaker, text in TRANSCRIPT:
        on = TODAY - timedelta(days=day)
        by_day.setdefault(on, []).append(TimelineEntry(time(hour, 0), speaker, text))
    for on, entries in by_day.items():
        add_timeline(tx, on, entries)
    add_tacit(
        tx,
        "MEMORY.md",
        [
            "Prefers answers in bullet points, with the command first.",
            "Runs the test suite before every push.",
            "Wants deploys announced in the team channel beforehand.",
        ],
    )


def _fact(slug: str, number: int, item: Item) -> Fact:
    when = TODAY - timedelta(days=item.days_ago)
    return Fact(
        id=f"{slug}-{number:03d}",
        fact=item.fact,
        category="context",
        timestamp=when,
        status="active",
        superseded_by=None,
        related_entities=(),
        last_accessed=when,
        access_count=1,
        recorded_at=when,
        source=SOURCE,
    )


def own_questions(root: Path) -> dict[str, dict[str, float]]:
    build_own_store(root / "store")
    turns = [
        (f"t{index}", f"{speaker}: {text}")
        for index, (_, _, speaker, text) in enumerate(TRANSCRIPT)
    ]
    turn_of = {text: id_ for id_, text in turns}
    systems: dict[
        str, tuple[Callable[[str, int], list[Result]], Callable[[Question], set[str]]]
    ] = {
        "bm25 raw turns": (bm25_baseline(turns), lambda q: {turn_of[q.turn]}),
        "memoryd search": (memoryd_search(root / "store"), lambda q: {q.fact}),
    }
    table: dict[str, dict[str, float]] = {}
    for name, (ask, wanted) in systems.items():
        recall = reciprocal = contained = 0.0
        for question in QUESTIONS:
            results = ask(question.text, 10)
            target = wanted(question)
            ranks = [rank for rank, r in enumerate(results, start=1) if r.ids & target]
            recall += bool(ranks and ranks[0] <= 5)
            reciprocal += 1 / ranks[0] if ranks else 0.0
            contained += _contains(results, question.answer)
        count = len(QUESTIONS)
        table[name] = {
            "recall@5": recall / count,
            "MRR": reciprocal / count,
            "containment@10": contained / count,
        }
    return table


def _contains(results: Sequence[Result], answer: str) -> bool:
    return normalise(answer) in normalise(" ".join(result.text for result in results))


# -- (b) LoCoMo -------------------------------------------------------------------------------


def session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def locomo(root: Path, conversations: int) -> dict[str, dict[str, float]] | None:
    files = sorted(LOCOMO.glob("conv-*.json"))[:conversations]
    if not files:
        return None
    totals: dict[str, list[float]] = {
        "bm25 raw turns": [0, 0],
        "memoryd search": [0, 0],
    }
    asked = 0
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        data = data.get("conversation", data) | {"qa": data["qa"]}
        store = root / file.stem / "store"
        if store.exists():
            shutil.rmtree(store.parent)
        store.mkdir(parents=True)
        tx = DirectStore(store)
        turns: list[tuple[str, str]] = []
        line_ids: dict[str, str] = {}
        number = 1
        while f"session_{number}" in data:
            when = session_date(data[f"session_{number}_date_time"])
            entries = []
            for turn in data[f"session_{number}"]:
                said = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    said += f" [shares {turn['blip_caption']}]"
                turns.append((turn["dia_id"], said))
                entry = TimelineEntry(when.time().replace(second=0), turn["speaker"], said)
                line_ids[normalise(entry.line())] = turn["dia_id"]
                entries.append(entry)
            add_timeline(tx, when.date(), entries)
            number += 1
        baseline = bm25_baseline(turns)
        ours = memoryd_search(store)
        for qa in data["qa"]:
            if qa.get("category") == 5 or "answer" not in qa:
                continue
            asked += 1
            evidence = set(qa.get("evidence") or ())
            for name, ask in (("bm25 raw turns", baseline), ("memoryd search", ours)):
                results = ask(qa["question"], 10)
                if name == "memoryd search":
                    results = [Result(r.text, r.ids | _line_id(r.text, line_ids)) for r in results]
                totals[name][0] += _contains(results, str(qa["answer"]))
                totals[name][1] += any(r.ids & evidence for r in results)
    return {
        name: {"containment@10": c / asked, "evidence@10": e / asked, "questions": asked}
        for name, (c, e) in totals.items()
    }


def _line_id(text: str, line_ids: dict[str, str]) -> frozenset[str]:
    key = normalise(text)
    for line, dia_id in line_ids.items():
        if line and line in key:
            return frozenset({dia_id})
    return frozenset()


def _print(title: str, table: dict[str, dict[str, float]]) -> None:
    print(title)
    for name, row in table.items():
        cells = "  ".join(
            f"{key} {value:.0f}" if key == "questions" else f"{key} {value:.1%}"
            for key, value in row.items()
        )
        print(f"  {name:16} {cells}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks retrieval")
    parser.add_argument("--conversations", type=int, default=9, help="LoCoMo conversations")
    options = parser.parse_args(argv)
    _print(f"own store, {len(QUESTIONS)} labelled questions", own_questions(DATA / "own"))
    if not LOCOMO.is_dir():
        print(f"LoCoMo skipped: {LOCOMO} is absent")
        return 0
    table = locomo(DATA / "locomo", options.conversations)
    if table is None:
        print(f"LoCoMo skipped: no conv-*.json in {LOCOMO}")
        return 0
    _print("LoCoMo (categories 1-4)", table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
