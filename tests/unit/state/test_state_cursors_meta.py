"""Cursors (replaced per source as a set) and the key/value meta table."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.state import CursorRecord, State


def test_replace_source_writes_the_set_and_deletes_forgotten_files(state: State) -> None:
    state.cursors.replace_source("cos", "src-1", {"/a.jsonl": '{"pos":1}', "/b.jsonl": '{"pos":2}'})
    state.cursors.replace_source("cos", "src-2", {"/c.jsonl": '{"pos":3}'})

    state.cursors.replace_source("cos", "src-1", {"/b.jsonl": '{"pos":20}', "/d.jsonl": "{}"})

    assert state.cursors.for_source("cos", "src-1") == {
        "/b.jsonl": '{"pos":20}',
        "/d.jsonl": "{}",
    }
    assert state.cursors.for_source("cos", "src-2") == {"/c.jsonl": '{"pos":3}'}
    assert state.cursors.for_source("other-agent", "src-1") == {}


def test_update_changes_some_and_forgets_others(state: State) -> None:
    state.cursors.replace_source("cos", "s", {"/a": "1", "/b": "2", "/c": "3"})
    state.cursors.update("cos", "s", {"/a": "10", "/new": "4"}, forgotten=["/c"])
    assert state.cursors.for_source("cos", "s") == {"/a": "10", "/b": "2", "/new": "4"}


def test_all_lists_every_cursor_in_order(state: State) -> None:
    state.cursors.replace_source("b-agent", "s", {"/z": "1"})
    state.cursors.replace_source("a-agent", "s", {"/y": "2", "/x": "3"})
    assert state.cursors.all() == [
        CursorRecord("a-agent", "s", "/x", "3"),
        CursorRecord("a-agent", "s", "/y", "2"),
        CursorRecord("b-agent", "s", "/z", "1"),
    ]


def test_a_failed_replacement_leaves_the_old_cursors(state: State) -> None:
    state.cursors.replace_source("cos", "s", {"/a": "1"})
    with pytest.raises(RuntimeError), state.transaction():
        state.cursors.replace_source("cos", "s", {"/b": "2"})
        raise RuntimeError("the commit failed before the cursors could advance")
    assert state.cursors.for_source("cos", "s") == {"/a": "1"}


def test_cursors_survive_reopening(state_path: Path) -> None:
    with State.open(state_path) as state:
        state.cursors.replace_source("cos", "s", {"/a": '{"inode":7}'})
    with State.open(state_path) as state:
        assert state.cursors.for_source("cos", "s") == {"/a": '{"inode":7}'}


def test_meta_text_and_json(state: State) -> None:
    assert state.meta.get("missing") is None
    assert state.meta.get_json("missing") is None
    state.meta.set("budget.exhausted_logged", "2026-03-01")
    state.meta.set("budget.exhausted_logged", "2026-03-02")
    state.meta.set_json("heartbeat.last", {"facts_added": 3, "commit": "abc"})
    assert state.meta.get("budget.exhausted_logged") == "2026-03-02"
    assert state.meta.get("heartbeat.last") == '{"commit":"abc","facts_added":3}'
    assert state.meta.get_json("heartbeat.last") == {"commit": "abc", "facts_added": 3}
    state.meta.delete("heartbeat.last")
    assert state.meta.get("heartbeat.last") is None
