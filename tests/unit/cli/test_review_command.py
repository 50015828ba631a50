"""`memoryd review` in process: listing, accepting, rejecting, and the queue's files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memoryd.cli import main
from memoryd.errors import EXIT_OK, EXIT_USAGE, CorruptFileError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.layout import init_store
from memoryd.store.provenance import TipSource, read_provenance, record_provenance
from memoryd.store.review import (
    REVIEW_DIR,
    ReviewItem,
    count_held_files,
    decide,
    hold,
    list_items,
    read_item,
)
from memoryd.worktree import UnitOfWork

SOURCE = TipSource("ops", "s1", "/logs/s1.jsonl", (4, 9), "untrusted", "2026-03-01")
TIP = ReviewItem(
    kind="skill",
    agent="ops",
    text="git push --force origin main",
    reasons=("force-push", "untrusted-source"),
    held="2026-03-02",
    topic="git",
    sources=(SOURCE,),
)
TACIT = ReviewItem(
    kind="tacit",
    agent="ops",
    text="Staging moved to port 6543",
    reasons=("untrusted-source",),
    held="2026-03-02",
    sources=(SOURCE,),
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    init_store(root, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    uow = UnitOfWork(GitStore(root, GitIdentity("memoryd", "memoryd@localhost"), None))
    hold(uow, TIP)
    hold(uow, TACIT)
    uow.apply_and_commit("heartbeat: held two", {})
    (tmp_path / "memoryd.toml").write_text(
        f'[store]\npath = "{root}"\n[state]\npath = "{tmp_path / "state"}"\n'
        '[llm]\nprovider = "markers"\n',
        encoding="utf-8",
    )
    return root


def run(store: Path, *args: str) -> int:
    return main(["--config", str(store.parent / "memoryd.toml"), "review", *args])


def git(store: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(store), *args], check=True, capture_output=True, text=True
    ).stdout


def test_the_list_shows_each_held_item_with_its_provenance(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(store) == EXIT_OK
    out = capsys.readouterr().out

    assert out.startswith("2 held for review, 0 decided before")
    assert TIP.id in out and TACIT.id in out
    assert "reasons: force-push, untrusted-source" in out
    assert "from:    ops session s1, /logs/s1.jsonl lines 4-9, untrusted text, 2026-03-01" in out


def test_accept_files_the_tip_with_its_provenance_in_an_audited_commit(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(store, "accept", TIP.id) == EXIT_OK
    assert f"{TIP.id} accepted" in capsys.readouterr().out

    assert "- git push --force origin main" in (store / "agents/ops/git.md").read_text()
    uow = UnitOfWork(GitStore(store, GitIdentity("m", "m@x"), None))
    assert read_provenance(uow, "agents/ops/git.md")[TIP.text] == [SOURCE]
    item = read_item(uow, TIP.id)
    assert item is not None and item.status == "accepted" and item.decided
    message = git(store, "log", "-1", "--format=%B")
    assert message.startswith(f"review: accept {TIP.id}, skill of ops (git)")
    assert f"Memoryd-Review: accept {TIP.id}" in message
    assert git(store, "status", "--porcelain") == ""
    assert count_held_files(store) == 1


def test_reject_never_files_and_a_second_decision_is_a_usage_error(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(store, "reject", TACIT.id) == EXIT_OK
    assert run(store, "accept", TACIT.id) == EXIT_USAGE
    assert run(store, "accept", "r-ffffffffff") == EXIT_USAGE
    assert run(store, "accept") == EXIT_USAGE
    capsys.readouterr()

    assert "6543" not in (store / "MEMORY.md").read_text()
    assert run(store, "--json") == EXIT_OK
    listed = {item["id"]: item["status"] for item in json.loads(capsys.readouterr().out)}
    assert listed == {TIP.id: "held", TACIT.id: "rejected"}


def test_holding_the_same_tip_again_adds_its_source_once(store: Path) -> None:
    uow = UnitOfWork(GitStore(store, GitIdentity("m", "m@x"), None))
    other = TipSource("ops", "s2", "/logs/s2.jsonl", (1, 2), "agent", "2026-03-03")

    hold(uow, TIP)
    again = hold(uow, ReviewItem(**{**TIP.__dict__, "sources": (other,)}))

    assert again.sources == tuple(sorted((SOURCE, other)))
    assert [item.id for item in list_items(uow)] == sorted([TIP.id, TACIT.id])


def test_broken_queue_and_provenance_files_are_reported_not_guessed(store: Path) -> None:
    uow = UnitOfWork(GitStore(store, GitIdentity("m", "m@x"), None))
    uow.write_text(f"{REVIEW_DIR}/{TIP.id}.json", "{not json")
    uow.write_text(".memoryd/provenance/MEMORY.md.json", '{"tips": {"x": [{"trust": "root"}]}}')

    with pytest.raises(CorruptFileError):
        read_item(uow, TIP.id)
    with pytest.raises(CorruptFileError):
        decide(uow, TIP.id, "accepted", "2026-03-04")
    with pytest.raises(CorruptFileError):
        record_provenance(uow, "MEMORY.md", "x", SOURCE)
    assert read_item(uow, "../etc/passwd") is None
    uow.apply_and_commit("broken", {})
    assert count_held_files(store) == 2  # a broken file counts as waiting for a person
