"""A link or FIFO planted in the store is set aside, never followed, and the rest of the heartbeat
files: real store, real git, real `memoryd` processes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.cli import write_config
from tests.support.reading import JANE, git, memoryd, today_at, write_transcript

from memoryd.errors import EXIT_CONFIG, EXIT_OK

pytestmark = pytest.mark.slow

BOB = "life/areas/people/bob-smith"


@pytest.fixture
def filed(tmp_path: Path) -> Path:
    write_config(tmp_path)
    write_transcript(tmp_path)
    assert memoryd(tmp_path, "init").returncode == EXIT_OK
    assert memoryd(tmp_path, "heartbeat").returncode == EXIT_OK
    return tmp_path


def _more_to_file(folder: Path) -> None:
    lines = [
        "remember: person Bob Smith: Runs the Porto office",
        "remember: person Jane Doe: Drinks green tea",
    ]
    with (folder / "logs" / "b.jsonl").open("w", encoding="utf-8") as handle:
        for text in lines:
            row = {"role": "user", "content": text, "timestamp": today_at(1)}
            handle.write(json.dumps(row) + "\n")


def _link_summary(store: Path, outside: Path) -> None:
    (store / JANE / "summary.md").unlink()
    os.symlink(outside, store / JANE / "summary.md")


def _link_folder(store: Path, outside: Path) -> None:
    outside.unlink()
    outside.mkdir()
    os.symlink(outside, store / BOB)


def _fifo_items(store: Path, _outside: Path) -> None:
    (store / JANE / "items.json").unlink()
    os.mkfifo(store / JANE / "items.json")


@pytest.mark.parametrize(
    "plant",
    [_link_summary, _link_folder, _fifo_items],
    ids=["symlinked-file", "symlinked-entity-folder", "fifo"],
)
def test_a_planted_entry_is_set_aside_and_the_rest_is_filed(
    filed: Path, plant: Callable[[Path, Path], None]
) -> None:
    store = filed / "store"
    outside = filed / "outside.txt"
    outside.write_text("not memoryd's\n", encoding="utf-8")
    plant(store, outside)
    _more_to_file(filed)
    result = memoryd(filed, "heartbeat")
    assert result.returncode == EXIT_OK, result.stderr
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    aside = [e for e in events if e["event"] == "store.path_set_aside"]
    assert len(aside) == 1 and aside[0]["kind"] in ("symlink", "fifo")
    # Nothing was written through the link, and both entities' facts are filed and committed.
    if outside.is_file():
        assert outside.read_text(encoding="utf-8") == "not memoryd's\n"
    else:
        assert os.listdir(outside) == []
    bob = json.loads((store / BOB / "items.json").read_text(encoding="utf-8"))
    assert [fact["fact"] for fact in bob] == ["Runs the Porto office"]
    jane = (store / JANE / "items.json").read_text(encoding="utf-8")
    assert "Drinks green tea" in jane
    assert not any(
        os.path.islink(p) for p in (store / JANE, store / BOB, store / JANE / "summary.md")
    )
    assert git(filed, "status", "--porcelain") == ""
    assert "120000" not in git(filed, "ls-tree", "-r", "HEAD")  # no link in the history's tree
    # `status` says what was set aside and exits 78 until the operator clears it.
    status = memoryd(filed, "status")
    assert status.returncode == EXIT_CONFIG
    assert "set aside" in status.stdout and "remove that folder" in status.stdout
    folder = store / ".git" / "memoryd" / "set-aside"
    assert len(os.listdir(folder)) == 1
    for entry in folder.iterdir():
        entry.unlink()
    assert memoryd(filed, "status").returncode == EXIT_OK
    # The next heartbeat has nothing to set aside.
    again = memoryd(filed, "heartbeat")
    assert again.returncode == EXIT_OK and "store.path_set_aside" not in again.stderr


def test_a_fifo_git_does_not_list_is_set_aside_when_a_write_meets_it(tmp_path: Path) -> None:
    # Git lists no FIFO that is not tracked: the foreign-edits step cannot see this one, the
    # write of today's note meets it (a read that never blocks), and the heartbeat re-plans.
    write_config(tmp_path)
    write_transcript(tmp_path)
    assert memoryd(tmp_path, "init").returncode == EXIT_OK
    note = tmp_path / "store" / "memory" / f"{today_at(0)[:10]}.md"
    os.mkfifo(note)
    result = memoryd(tmp_path, "heartbeat")
    assert result.returncode == EXIT_OK, result.stderr
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    names = [event["event"] for event in events]
    assert "store.path_set_aside" in names and "heartbeat.replanned" in names
    assert note.is_file() and "Met Jane about the launch" in note.read_text(encoding="utf-8")
    assert git(tmp_path, "status", "--porcelain") == ""
    assert memoryd(tmp_path, "status").returncode == EXIT_CONFIG


def test_a_link_in_place_of_an_entity_folder_loses_none_of_its_facts(filed: Path) -> None:
    store = filed / "store"
    outside = filed / "elsewhere"
    outside.mkdir()
    (store / JANE).rename(filed / "moved-away")
    os.symlink(outside, store / JANE)
    _more_to_file(filed)
    result = memoryd(filed, "heartbeat")
    assert result.returncode == EXIT_OK, result.stderr
    assert "store.path_set_aside" in result.stderr
    assert not os.path.islink(store / JANE) and os.listdir(outside) == []
    facts = json.loads((store / JANE / "items.json").read_text(encoding="utf-8"))
    texts = [fact["fact"] for fact in facts]
    assert "Joined Acme as CTO" in texts and "Drinks green tea" in texts
    assert git(filed, "status", "--porcelain") == ""
    assert "items.json" in git(filed, "ls-tree", "-r", "--name-only", "HEAD", JANE)
