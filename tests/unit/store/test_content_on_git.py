"""The content modules over the real unit of work and a real git repository, end to end.

The other tests use a plain-folder transaction; this one checks that the same operations behave
through `UnitOfWork` (staged reads, folder moves recorded as renames, one commit per unit) and
that re-running a heartbeat's worth of changes commits nothing.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime, time
from pathlib import Path

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.catalog import EntityCatalog
from memoryd.store.facts import FactBook, FactDraft, FactSource
from memoryd.store.index import write_index
from memoryd.store.notes import TimelineEntry, add_timeline
from memoryd.store.skills import add_skill
from memoryd.store.tacit import add_tacit
from memoryd.worktree import UnitOfWork

NOW = datetime(2026, 1, 20, 12, 0, tzinfo=UTC)
DAY = date(2026, 1, 20)
SOURCE = FactSource("chief-of-staff", "s1", "/t/s1.jsonl", (1, 9))


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def unit_for(root: Path) -> UnitOfWork:
    return UnitOfWork(GitStore(root, GitIdentity("memoryd", "memoryd@test.invalid"), lambda: NOW))


def draft(text: str, supersedes: tuple[str, ...] = ()) -> FactDraft:
    return FactDraft(text, "status", DAY, DAY, SOURCE, supersedes=supersedes)


def heartbeat(root: Path) -> str | None:
    """What a heartbeat would file from one conversation, resolving before creating."""
    unit = unit_for(root)
    catalog = EntityCatalog.load(unit)
    book = FactBook(unit, catalog)
    for name, kind in (("Jane Doe", "person"), ("Product Launch", "project")):
        entity = catalog.resolve(name, kind) or catalog.create(name, kind, today=DAY)
        book.file_for(entity).add(draft(f"{name} is on track"), recorded_at=DAY)
    book.save_all()
    add_timeline(unit, DAY, [TimelineEntry(time(14, 5), "chief-of-staff", "Launch review")])
    add_tacit(unit, "MEMORY.md", ["Prefers terse bullet summaries"])
    add_skill(unit, "agents", agent="chief-of-staff", topic="git", tip="Sign commits")
    write_index(unit, catalog)
    return unit.apply_and_commit("heartbeat", {"Run-Id": "test"})


def test_a_heartbeat_commits_once_and_its_rerun_commits_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")

    first = heartbeat(root)
    assert first is not None
    files = set(git(root, "ls-files").split())
    assert {
        "life/areas/people/jane-doe/items.json",
        "life/projects/product-launch/entity.json",
        "life/index.md",
        "memory/2026-01-20.md",
        "MEMORY.md",
        "agents/chief-of-staff/git.md",
        "agents/chief-of-staff/skills-index.md",
    } <= files

    assert heartbeat(root) is None
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"


def test_archiving_through_the_unit_of_work_is_a_rename_and_facts_follow(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    heartbeat(root)

    unit = unit_for(root)
    catalog = EntityCatalog.load(unit)
    book = FactBook(unit, catalog)
    launch = catalog.resolve("Product Launch")
    assert launch is not None
    old = book.file_for(launch).active()[0]
    catalog.set_status(launch, "completed")
    outcome = book.file_for(launch).add(draft("Shipped", (old.id,)), recorded_at=DAY)
    assert outcome.supersession.superseded == (old.id,)
    assert book.bump(old.id, date(2026, 1, 21)) is not None
    book.save_all()
    write_index(unit, catalog)
    assert unit.apply_and_commit("archive", {}) is not None

    status = git(root, "show", "--name-status", "-M", "--format=", "HEAD")
    assert (
        "R100\tlife/projects/product-launch/summary.md\t"
        "life/archives/projects/product-launch/summary.md"
    ) in status
    assert not (root / "life/projects/product-launch").exists()
    reloaded = EntityCatalog.load(unit_for(root))
    archived = reloaded.by_ref("projects/product-launch")
    assert archived is not None
    assert archived.status == "completed"
    assert "## Archived" in (root / "life/index.md").read_text()
    assert (
        '"supersededBy": "product-launch-002"'
        in (root / "life/archives/projects/product-launch/items.json").read_text()
    )
