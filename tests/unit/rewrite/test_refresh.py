"""The template summaries refreshed after a heartbeat (`memoryd.store.refresh`): each changed
`items.json` is traced to its entity by its path, archived or not, and nothing else is."""

from __future__ import annotations

from pathlib import Path

from tests.support.rewrite import TODAY, Planted, planted_store

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.catalog import EntityCatalog
from memoryd.store.refresh import refresh_summaries
from memoryd.store.tiers import TierRule
from memoryd.worktree import UnitOfWork


def test_the_entities_owning_the_changed_items_files_are_refreshed(tmp_path: Path) -> None:
    store = planted_store(
        tmp_path / "store",
        [
            Planted("Jane Doe", "Joined Acme as CTO", age=2),
            Planted("Old Co", "Closed in 2019", age=3, kind="company"),
            Planted("Acme", "Renewed the contract", age=4, kind="company"),
        ],
    )
    git = GitStore(store, GitIdentity("m", "m@x"), None)
    uow = UnitOfWork(git)
    catalog = EntityCatalog.load(uow)
    old_co = catalog.resolve("Old Co")
    assert old_co is not None
    archived = catalog.set_status(old_co, "completed")
    assert uow.apply_and_commit("test: archive", {}) is not None

    uow = UnitOfWork(git)
    catalog = EntityCatalog.load(uow)
    refreshed = refresh_summaries(
        uow,
        catalog,
        [
            "life/areas/people/jane-doe/items.json",
            archived.items_path,  # under life/archives/
            "life/areas/companies/old-co/items.json",  # where Old Co was: no entity now
            "life/areas/people/ghost/items.json",
            "life/index.md",
        ],
        today=TODAY,
        rule=TierRule(),
    )
    assert refreshed == ["companies/old-co", "people/jane-doe"]
    assert "Closed in 2019" in (uow.read_text(archived.summary_path) or "")
    assert "Renewed the contract" not in (
        uow.read_text("life/areas/companies/acme/summary.md") or ""
    )
