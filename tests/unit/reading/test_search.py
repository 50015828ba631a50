"""The search index on its own: what each file gives, the kinds filter, any-word fallback."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from tests.unit.rewrite.support import Planted, plant

from memoryd.reading.search import SearchIndex
from memoryd.rewrite.tiers import TierRule
from memoryd.store.layout import init_store

TODAY = date(2026, 3, 10)


def test_every_kind_of_file_is_found_and_filtered(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    plant(store, [Planted("Jane Doe", "Plays chess on Sundays", age=1)], today=TODAY)
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
        # Every word must match; when nothing does, any word may.
        assert [
            hit.kind for hit in index.search("music chess", today=TODAY, rule=rule, kinds=["tacit"])
        ] == ["tacit"]
        assert index.search("   ", today=TODAY, rule=rule) == []
        assert index.search('"; DROP TABLE entries; --', today=TODAY, rule=rule) == []
