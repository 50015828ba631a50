"""Search built for questions: no template sentences, one hit per fact, dates and tiers on each
hit, stop words and stems, the daily-note timeline, and an index of an older format rebuilt."""

from __future__ import annotations

import sqlite3
from datetime import date, time
from pathlib import Path

from tests.support.rewrite import Planted, planted_store

from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.search import INDEX_FILE_NAME, SearchIndex
from memoryd.store.catalog import entity_at
from memoryd.store.items import parse_items
from memoryd.store.notes import TEMPLATE_LINES, TimelineEntry, add_timeline
from memoryd.store.summaries import all_cold_body, render_template, summary_file, summary_input
from memoryd.store.tacit import HEADER, add_tacit
from memoryd.store.tiers import TierRule

TODAY = date(2026, 3, 10)
RULE = TierRule()
ALICE = "life/areas/people/alice-martin"


class DiskStore(ReadOnlyStore):
    """Writes go straight to the files (what a heartbeat's transaction leaves on disk)."""

    def write_text(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _store(tmp_path: Path) -> Path:
    """Alice's facts with their template summary, three days of notes and MEMORY.md, each
    written by memoryd's own writers (so with its own template sentences)."""
    store = planted_store(
        tmp_path / "store",
        [
            Planted("Alice Martin", "Alice plans to move to Lisbon in the autumn", age=3),
            Planted("Alice Martin", "Alice adopted a greyhound named Pixel", age=1),
            Planted("Bob Chen", "Bob leads the payments team", age=2),
        ],
        today=TODAY,
    )
    files = DiskStore(store)
    alice = entity_at(files, ALICE)
    assert alice is not None
    facts = parse_items(store / alice.items_path, (store / alice.items_path).read_text())
    body = render_template(summary_input(alice, facts, TODAY, RULE))
    files.write_text(f"{ALICE}/summary.md", summary_file(alice.name, body))
    bob = "life/areas/people/bob-chen/summary.md"
    files.write_text(bob, summary_file("Bob Chen", all_cold_body("Bob Chen")))
    for day in (7, 8, 9):
        entry = TimelineEntry(time(10, day), "ops", f"Reviewed the deploy of release {day}")
        add_timeline(files, date(2026, 3, day), [entry])
    add_timeline(files, date(2026, 3, 9), [TimelineEntry(time(16, 0), "ops", "Met the auditors")])
    add_tacit(files, "MEMORY.md", ["Prefers short answers"])
    return store


def _search(store: Path, query: str, **options: object) -> list[dict[str, object]]:
    with SearchIndex.open(store.parent / "state", store) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        hits = index.search(query, today=TODAY, rule=RULE, **options)  # type: ignore[arg-type]
    return [hit.to_json() for hit in hits]


def test_memoryd_s_own_template_sentences_are_never_returned(tmp_path: Path) -> None:
    store = _store(tmp_path)
    templates = set(TEMPLATE_LINES) | {line for line in HEADER.splitlines() if line.strip()}
    templates.add(all_cold_body("Bob Chen"))
    assert "What the agents did and heard, by local time." in TEMPLATE_LINES
    for query in [
        "What did the agents do and hear, by local time?",
        "daily note filed by memoryd from the agents' conversations",
        "How does the user operate: preferences, working style, rules?",
        "Has anything about Bob Chen been used recently?",
        *templates,
    ]:
        texts = [hit["text"] for hit in _search(store, query, limit=50)]
        assert not set(texts) & templates, query
    # What a person wrote is still found: the note's own lines and the tacit bullet.
    assert [hit["kind"] for hit in _search(store, "short answers")] == ["tacit"]


def test_one_hit_per_fact_the_summary_line_folded_in(tmp_path: Path) -> None:
    store = _store(tmp_path)
    summary = (store / ALICE / "summary.md").read_text()
    assert "Lisbon in the autumn [alice-martin-001]" in summary  # the line that would repeat it
    hits = _search(store, "Lisbon autumn")
    assert [(hit["kind"], hit["id"]) for hit in hits] == [("fact", "alice-martin-001")]
    # Asked for summaries alone, the line itself is the hit.
    lines = _search(store, "Lisbon autumn", kinds=["summary"])
    assert [(hit["kind"], hit["path"]) for hit in lines] == [("summary", f"{ALICE}/summary.md")]


def test_each_hit_carries_entity_kind_status_date_and_tier(tmp_path: Path) -> None:
    store = _store(tmp_path)
    (fact,) = _search(store, "greyhound")
    assert fact["entity"] == "Alice Martin" and fact["ref"] == "people/alice-martin"
    assert (fact["kind"], fact["status"], fact["tier"]) == ("fact", "active", "hot")
    assert fact["date"] == "2026-03-09"  # the fact's own date: a "when" question is answered
    (note,) = _search(store, "auditors")
    assert (note["kind"], note["date"], note["entity"]) == ("note", "2026-03-09", None)


def test_a_question_finds_the_fact_its_words_point_to(tmp_path: Path) -> None:
    store = _store(tmp_path)
    hits = _search(store, "What are Alice's plans?")
    assert hits[0]["id"] == "alice-martin-001"
    hits = _search(store, "What is the name of Alice's dog, the greyhound?")
    assert hits[0]["id"] == "alice-martin-002"
    # Not every word has to be there: "leading" and "team" are enough for Bob's fact.
    hits = _search(store, "Who is leading the payments team these days?")
    assert hits[0]["id"] == "bob-chen-001"


def test_stems_match_planning_finds_plans(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert [hit["id"] for hit in _search(store, "planning", kinds=["fact"])] == ["alice-martin-001"]
    assert [hit["id"] for hit in _search(store, "adopting", kinds=["fact"])] == ["alice-martin-002"]


def test_the_daily_note_timeline_stays_searchable(tmp_path: Path) -> None:
    store = _store(tmp_path)
    hits = _search(store, "When was the deploy of release 8 reviewed?")
    assert hits[0]["kind"] == "note" and hits[0]["path"] == "memory/2026-03-08.md"
    assert hits[0]["text"] == "- 10:08 · ops · Reviewed the deploy of release 8"
    assert hits[0]["date"] == "2026-03-08"


def test_an_index_of_the_old_format_is_rebuilt(tmp_path: Path) -> None:
    store = _store(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    old = sqlite3.connect(state / INDEX_FILE_NAME)
    old.executescript(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('version', '3');"
        "CREATE TABLE files(path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, inode INTEGER);"
        "CREATE VIRTUAL TABLE docs USING fts5(terms, tokenize='unicode61');"
    )
    old.commit()
    old.close()
    assert [hit["id"] for hit in _search(store, "planning", kinds=["fact"])] == ["alice-martin-001"]
    check = sqlite3.connect(state / INDEX_FILE_NAME)
    try:
        assert check.execute("SELECT value FROM meta WHERE key = 'version'").fetchone() != ("3",)
        (schema,) = check.execute("SELECT sql FROM sqlite_master WHERE name = 'docs'").fetchone()
        assert "porter" in schema
    finally:
        check.close()
