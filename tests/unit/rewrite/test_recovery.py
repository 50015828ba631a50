"""A rewrite killed between writing and recording is finished or undone by the next one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.rewrite.recovery import (
    REWRITE_INTENT_KEY,
    build_intent,
    finish_interrupted_rewrite,
)
from memoryd.state.facade import State
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.layout import init_store
from memoryd.worktree import RUN_TRAILER, UnitOfWork

NOW = datetime(2026, 3, 10, 3, tzinfo=UTC)
RECORD = EntityRewrite("people/jane-doe", NOW, "llm:a:b", date(2026, 3, 17))
SUMMARY = "life/areas/people/jane-doe/summary.md"


@pytest.fixture
def git(tmp_path: Path) -> GitStore:
    init_store(tmp_path / "store", "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    return GitStore(tmp_path / "store", GitIdentity("memoryd", "memoryd@localhost"), None)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[State]:
    opened = State.open(tmp_path / "state.db")
    yield opened
    opened.close()


def staged(git: GitStore) -> UnitOfWork:
    uow = UnitOfWork(git)
    uow.write_text(SUMMARY, "# Jane Doe\n\n- CTO [jane-doe-001]\n")
    return uow


def intent_for(uow: UnitOfWork, state: State) -> None:
    intent = build_intent(
        "run-1",
        writes=uow.plan(),
        records=[RECORD],
        memos={"rewrite.consolidation_refused:MEMORY.md": "d1"},
        finished_batch=None,
        succeeded=True,
    )
    state.meta.set_json(REWRITE_INTENT_KEY, intent)


def test_nothing_to_do_without_an_intent(git: GitStore, state: State) -> None:
    assert finish_interrupted_rewrite(state, git, NOW) == "none"


def test_killed_after_its_commit_the_bookkeeping_is_finished(git: GitStore, state: State) -> None:
    uow = staged(git)
    intent_for(uow, state)
    assert uow.apply_and_commit("rewrite: 1 summary, 0 archived", {RUN_TRAILER: "run-1"})
    assert finish_interrupted_rewrite(state, git, NOW) == "finished"
    assert state.rewrites.get("people/jane-doe") == RECORD
    assert state.meta.get("rewrite.consolidation_refused:MEMORY.md") == "d1"
    assert state.rewrites.last_success() == NOW
    assert state.meta.get(REWRITE_INTENT_KEY) is None


def test_killed_before_its_commit_its_own_writes_are_undone(git: GitStore, state: State) -> None:
    uow = staged(git)
    intent_for(uow, state)
    path = git.store_root / SUMMARY
    path.parent.mkdir(parents=True)
    path.write_text("# Jane Doe\n\n- CTO [jane-doe-001]\n", encoding="utf-8")  # half-done
    other = git.store_root / "notes.md"
    other.write_text("a person's edit\n", encoding="utf-8")
    assert finish_interrupted_rewrite(state, git, NOW) == "undone"
    assert not path.exists()  # not in HEAD: put back as HEAD has it
    assert other.read_text(encoding="utf-8") == "a person's edit\n"
    assert state.rewrites.get("people/jane-doe") is None
    assert state.meta.get(REWRITE_INTENT_KEY) is None
