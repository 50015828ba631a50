"""The search index on its own: what each file gives, the kinds filter, any word matching."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from tests.support.rewrite import Planted, plant, planted_store

from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.search import SearchIndex
from memoryd.store.catalog import entity_at
from memoryd.store.tiers import TierRule

TODAY = date(2026, 3, 10)


def test_every_kind_of_file_is_found_and_filtered(tmp_path: Path) -> None:
    store = planted_store(
        tmp_path / "store", [Planted("Jane Doe", "Plays chess on Sundays", age=1)], today=TODAY
    )
    (store / "MEMORY.md").write_text("# Tacit\n\n- Plays music while working\n")
    (store / "memory" / "2026-03-09.md").write_text("# Monday\n\n- 10:00 · ops · chess club\n")
    (store / "memory" / "notes.md").write_text("- not a daily note: chess\n")
    (store / "agents" / "ops").mkdir(parents=True)
    (store / "agents" / "ops" / "chess.md").write_text("# Chess\n\n- open with e4\n")
    with SearchIndex.open(tmp_path / "state", store) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        rule = TierRule()
        hits = index.search("chess", today=TODAY, rule=rule)
        assert {(hit.kind, hit.path, hit.line, hit.tier) for hit in hits} == {
            ("fact", "life/areas/people/jane-doe/items.json", 3, "hot"),
            ("note", "memory/2026-03-09.md", 3, "hot"),  # memory/notes.md is not a daily note
        }
        assert [
            hit.kind for hit in index.search("chess", today=TODAY, rule=rule, kinds=["note"])
        ] == ["note"]
        skill = index.search("e4", today=TODAY, rule=rule)
        assert [(hit.kind, hit.ref, hit.line) for hit in skill] == [("skill", "ops", 3)]
        tacit = index.search("music", today=TODAY, rule=rule)
        assert [(hit.kind, hit.tier) for hit in tacit] == [("tacit", "warm")]
        # Any word may match; covering more of them ranks higher.
        assert [
            hit.kind for hit in index.search("music chess", today=TODAY, rule=rule, kinds=["tacit"])
        ] == ["tacit"]
        assert index.search("   ", today=TODAY, rule=rule) == []
        assert index.search('"; DROP TABLE entries; --', today=TODAY, rule=rule) == []


def test_the_index_ranks_the_hottest_entities_for_context(tmp_path: Path) -> None:
    store = planted_store(
        tmp_path / "store",
        [
            Planted("Cold Carl", "Old news", age=200),
            Planted("Warm Wendy", "Likes tea", age=15),
            Planted("Hot Harry", "Started today", age=0),
            Planted("Hot Harry", "Ships on Friday", age=1),
            Planted("Hot Hanna", "Joined today", age=0),
            Planted("Acme", "Renewed", age=0, kind="company"),
        ],
        today=TODAY,
    )
    with SearchIndex.open(tmp_path / "state", store) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        folders = index.hottest_entities(today=TODAY, rule=TierRule(), limit=3)
    assert folders == [
        "life/areas/people/hot-harry",
        "life/areas/companies/acme",
        "life/areas/people/hot-hanna",
    ]


def test_an_entity_is_read_from_its_folder_alone(tmp_path: Path) -> None:
    store = planted_store(
        tmp_path / "store", [Planted("Jane Doe", "Plays chess", age=1)], today=TODAY
    )
    files = ReadOnlyStore(store)
    jane = entity_at(files, "life/areas/people/jane-doe")
    assert jane is not None and (jane.name, jane.ref) == ("Jane Doe", "people/jane-doe")
    assert entity_at(files, "life/areas/people/nobody") is None
    assert entity_at(files, "life/areas") is None
    assert entity_at(files, "memory/x") is None
    assert entity_at(files, "life/unknown-bucket/x") is None


def _rows(state: Path) -> list[tuple[object, ...]]:
    import sqlite3

    with sqlite3.connect(state / "search.sqlite") as db:
        return sorted(db.execute("SELECT path, kind, id, ref, line, text, terms FROM entries"))


def test_a_refresh_from_a_commits_paths_reads_only_them(tmp_path: Path) -> None:
    store = planted_store(
        tmp_path / "store", [Planted("Jane Doe", "Plays chess", age=1)], today=TODAY
    )
    plant(store, [Planted("Bob Roe", "Plays go", age=1)], today=TODAY)
    (store / "agents" / "ops").mkdir(parents=True)
    (store / "agents" / "ops" / "chess.md").write_text("# Chess\n\n- open with e4\n")
    with SearchIndex.open(tmp_path / "state", store) as index:
        # An empty index is built whole, whatever paths are given.
        assert index.refresh(tacit_file="MEMORY.md", skills_dir="agents", paths=[]).files_read > 3

        jane = "life/areas/people/jane-doe/items.json"
        text = (store / jane).read_text().replace("Plays chess", "Plays bridge")
        (store / jane).write_text(text)
        (store / "life/areas/people/bob-roe/summary.md").write_text("# Bob\n\n- edited by hand\n")
        (store / "agents" / "ops" / "chess.md").unlink()
        (store / "agents" / "ops" / ".hidden.md").write_text("- hidden\n")
        (store / "memory" / "2026-03-09.md").write_text("# Monday\n\n- bridge night\n")
        commit = [
            jane,
            "agents/ops/chess.md",
            "agents/ops/.hidden.md",
            "memory/2026-03-09.md",
            "life/index.md",
            "not/indexed.md",
        ]
        stats = index.refresh(tacit_file="MEMORY.md", skills_dir="agents", paths=commit)
        assert (stats.files_read, stats.files_dropped) == (2, 1)
        rule = TierRule()
        assert {hit.path for hit in index.search("bridge", today=TODAY, rule=rule)} == {
            jane,
            "memory/2026-03-09.md",
        }
        assert index.search("e4", today=TODAY, rule=rule) == []
        assert index.search("hidden", today=TODAY, rule=rule) == []
        # The hand edit outside the commit is seen by the next full refresh (every search's).
        assert index.search("edited", today=TODAY, rule=rule) == []
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        assert [hit.kind for hit in index.search("edited", today=TODAY, rule=rule)] == ["summary"]
    with SearchIndex.open(tmp_path / "full", store) as full:
        full.refresh(tacit_file="MEMORY.md", skills_dir="agents")
    assert _rows(tmp_path / "state") == _rows(tmp_path / "full")


def test_a_commits_path_through_a_symbolic_link_is_left_out_as_by_a_full_scan(
    tmp_path: Path,
) -> None:
    store = planted_store(
        tmp_path / "store", [Planted("Jane Doe", "Plays chess", age=1)], today=TODAY
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "linked.md").write_text("- linked skill\n")
    (store / "agents" / "ops").mkdir(parents=True)
    (store / "agents" / "ops" / "linked").symlink_to(outside)
    (store / "agents" / "ops" / "file.md").symlink_to(outside / "linked.md")
    with SearchIndex.open(tmp_path / "state", store) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        stats = index.refresh(
            tacit_file="MEMORY.md",
            skills_dir="agents",
            paths=["agents/ops/linked/linked.md", "agents/ops/file.md"],
        )
        assert stats.files_read == 0
        assert index.search("linked", today=TODAY, rule=TierRule()) == []
