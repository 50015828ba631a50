"""Incremental reading: random appends, half-written lines, truncation, replacement, rotation.

The central property: reading a file after each of many random appends yields every record of
the whole file exactly once, in order, as one read of the finished file would — except that a
branch abandoned after it was read stays read, and a message cut by a read may come as two turns.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.incremental import BASE, jsonl_file, stamp
from tests.support.sources import all_turns, make_reader, read_once, texts

from memoryd.sources.cursor import FileCursor
from memoryd.sources.model import Turn
from memoryd.sources.reader import ReadResult, SourceReader

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def claude_line(index: int, parent: int | None, role: str) -> str:
    entry = {
        "type": role,
        "uuid": f"u{index}",
        "parentUuid": None if parent is None else f"u{parent}",
        "sessionId": "s",
        "isSidechain": False,
        "timestamp": stamp(index),
        "message": {
            "role": role,
            "id": f"m{index}",
            "content": [{"type": "text", "text": f"text {index} ünï"}],
        },
    }
    return json.dumps(entry, ensure_ascii=False) + "\n"


def codex_file(count: int) -> str:
    lines = [json.dumps({"timestamp": stamp(0), "type": "session_meta", "payload": {"id": "sess"}})]
    for index in range(count):
        role = "user" if index % 2 == 0 else "assistant"
        kind = "input_text" if role == "user" else "output_text"
        payload = {
            "type": "message",
            "role": role,
            "content": [{"type": kind, "text": f"text {index}"}],
        }
        lines.append(
            json.dumps({"timestamp": stamp(index), "type": "response_item", "payload": payload})
        )
        lines.append(
            json.dumps(
                {
                    "timestamp": stamp(index),
                    "type": "event_msg",
                    "payload": {"type": "agent_message", "message": "mirror"},
                }
            )
        )
    return "\n".join(lines) + "\n"


def openclaw_file(count: int) -> str:
    lines = [json.dumps({"type": "session", "version": 3, "id": "oc", "timestamp": stamp(0)})]
    for index in range(count):
        message = {
            "role": "user" if index % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": f"text {index}"}],
        }
        parent = None if index == 0 else f"e{index - 1}"
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": f"e{index}",
                    "parentId": parent,
                    "timestamp": stamp(index),
                    "message": message,
                }
            )
        )
    return "\n".join(lines) + "\n"


def paperclip_event(index: int) -> dict[str, Any]:
    if index % 2 == 0:
        content = [{"type": "text", "text": f"text {index}"}]
        return {"type": "assistant", "message": {"id": f"m{index}", "content": content}}
    result = {"type": "tool_result", "tool_use_id": f"t{index}", "content": f"text {index}"}
    return {"type": "user", "message": {"content": [result]}}


def paperclip_file(count: int) -> str:
    stdout = "".join(json.dumps(paperclip_event(i)) + "\n" for i in range(count))
    return "".join(
        json.dumps({"ts": stamp(at), "stream": "stdout", "chunk": stdout[at : at + 29]}) + "\n"
        for at in range(0, len(stdout), 29)
    )


def markdown_file(count: int) -> str:
    return "".join(
        f"### {'User' if i % 2 == 0 else 'Assistant'}\n\ntext {i}\nmore {i}\n\n"
        for i in range(count)
    )


LINEAR: dict[str, tuple[str, Callable[[int], str]]] = {
    "claude-code": (
        "s.jsonl",
        lambda n: "".join(
            claude_line(i, i - 1 if i else None, "user" if i % 2 == 0 else "assistant")
            for i in range(n)
        ),
    ),
    "codex": ("rollout-x.jsonl", codex_file),
    "jsonl": ("log.jsonl", jsonl_file),
    "openclaw": ("oc.jsonl", openclaw_file),
    "paperclip": ("run-1.ndjson", paperclip_file),
    "markdown": ("chat.md", markdown_file),
}


def merged(turns: list[Turn]) -> list[tuple[str, str]]:
    """Join consecutive same-role turns: a message split by a read may arrive as two turns."""
    out: list[tuple[str, str]] = []
    for turn in turns:
        if out and out[-1][0] == turn.role:
            out[-1] = (turn.role, out[-1][1] + "\n" + turn.text)
        else:
            out.append((turn.role, turn.text))
    return out


def read_in_pieces(reader: SourceReader, path: Path, data: bytes, cuts: list[int]) -> list[Turn]:
    cursors: dict[str, FileCursor] = {}
    turns: list[Turn] = []
    previous = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        with path.open("ab") as handle:
            handle.write(data[previous:cut])
        previous = cut
        result = read_once(reader, cursors, first_sight=not cursors)
        assert result.skipped == []
        turns.extend(all_turns(result))
        cursors = result.cursors
    return turns


@FAST
@given(
    fmt=st.sampled_from(sorted(LINEAR)),
    count=st.integers(min_value=1, max_value=14),
    fractions=st.lists(st.floats(min_value=0, max_value=1), max_size=8),
)
def test_appending_in_random_pieces_yields_every_record_exactly_once(
    fmt: str, count: int, fractions: list[float]
) -> None:
    name, render = LINEAR[fmt]
    data = render(count).encode("utf-8")
    cuts = [int(fraction * len(data)) for fraction in fractions]
    with tempfile.TemporaryDirectory() as folder:
        whole = Path(folder) / "whole" / name
        whole.parent.mkdir()
        whole.write_bytes(data)
        expected = merged(all_turns(read_once(make_reader(fmt, whole))))
        pieces = Path(folder) / "pieces" / name
        pieces.parent.mkdir()
        got = read_in_pieces(make_reader(fmt, pieces), pieces, data, cuts)
    assert len(expected) == count
    if fmt == "markdown":
        assert merged(got) == expected
    else:
        assert [(t.role, t.text) for t in got] == expected


@FAST
@given(
    steps=st.lists(st.integers(min_value=0, max_value=6), min_size=2, max_size=16),
    fractions=st.lists(st.floats(min_value=0, max_value=1), max_size=6),
)
def test_rewinds_only_differ_by_branches_abandoned_after_they_were_read(
    steps: list[int], fractions: list[float]
) -> None:
    # Each step adds a node. 0 continues the current branch (roles alternate); v > 0 rewinds as
    # Claude Code does: the v-th latest user prompt on the branch is sent again, edited, so a
    # new user node becomes a sibling of that prompt and everything after it is abandoned.
    parents: list[int | None] = []
    roles: list[str] = []
    branch: list[int] = []
    for index, rewind in enumerate(steps):
        prompts = [node for node in branch if roles[node] == "user"]
        if rewind and len(prompts) >= rewind:
            redone = prompts[-rewind]
            branch = branch[: branch.index(redone)]
            role = "user"
        else:
            role = "assistant" if branch and roles[branch[-1]] == "user" else "user"
        parents.append(branch[-1] if branch else None)
        roles.append(role)
        branch.append(index)
    data = "".join(claude_line(i, parent, roles[i]) for i, parent in enumerate(parents)).encode()
    current = {f"text {i} ünï" for i in branch}
    with tempfile.TemporaryDirectory() as folder:
        whole = Path(folder) / "whole.jsonl"
        whole.write_bytes(data)
        single = texts(read_once(make_reader("claude-code", whole)))
        pieces = Path(folder) / "pieces.jsonl"
        got = [
            t.text
            for t in read_in_pieces(
                make_reader("claude-code", pieces),
                pieces,
                data,
                [int(f * len(data)) for f in fractions],
            )
        ]
    assert set(single) == current  # one read of the whole file: exactly the current branch
    assert len(got) == len(set(got))  # nothing twice
    assert current <= set(got)  # nothing of the current branch lost
    order = {text: i for i, text in enumerate(got)}
    assert sorted(single, key=order.__getitem__) == single  # file order kept


def test_half_written_last_line_waits_for_its_end(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    line = json.dumps({"role": "user", "content": "complete me", "timestamp": stamp(1)})
    path.write_text(line[:20], encoding="utf-8")
    reader = make_reader("jsonl", path)
    first = read_once(reader)
    assert texts(first) == []
    assert first.stats.malformed_lines == 0
    assert first.cursors[str(path)].position == 0
    assert reader.lag(first.cursors) == {str(path): 20}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line[20:] + "\n")
    second = read_once(reader, first.cursors)
    assert texts(second) == ["complete me"]
    assert reader.lag(second.cursors) == {str(path): 0}


@FAST
@given(
    count=st.integers(min_value=2, max_value=12),
    keep=st.integers(min_value=0, max_value=12),
    more=st.integers(min_value=0, max_value=5),
)
def test_replaced_or_rewritten_files_are_reread_without_repeats(
    count: int, keep: int, more: int
) -> None:
    keep = min(keep, count)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        path.write_text(jsonl_file(count), encoding="utf-8")
        reader = make_reader("jsonl", path)
        first = read_once(reader)
        # An editor-style save: a new file (new inode) with the same records and some new ones
        lines = jsonl_file(count + more).splitlines(keepends=True)
        replacement = Path(folder) / "tmp"
        replacement.write_text("".join(lines), encoding="utf-8")
        os.replace(replacement, path)
        second = read_once(reader, first.cursors)
        # A cleaner rewriting in place: drops the first records; nothing old may come back
        path.write_text("".join(lines[count - keep :]), encoding="utf-8")
        third = read_once(reader, second.cursors)
    assert texts(first) == [f"text {i}" for i in range(count)]
    assert texts(second) == [f"text {i}" for i in range(count, count + more)]
    assert texts(third) == []
    assert second.stats.files_restarted == 1


def test_truncated_file_with_new_content_is_read_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(jsonl_file(6), encoding="utf-8")
    reader = make_reader("jsonl", path)
    first = read_once(reader)
    fresh = json.dumps({"role": "user", "content": "after truncation", "timestamp": stamp(99)})
    path.write_text(fresh + "\n", encoding="utf-8")  # same inode, shorter
    second = read_once(reader, first.cursors)
    assert texts(second) == ["after truncation"]
    assert second.stats.files_restarted == 1
    assert second.cursors[str(path)].reread_until is None


def test_rotated_file_is_followed_and_the_new_one_read(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "agent.jsonl"
    path.write_text(jsonl_file(3), encoding="utf-8")
    reader = make_reader("jsonl", str(folder / "agent*.jsonl"))
    first = read_once(reader)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"role": "assistant", "content": "late line", "timestamp": stamp(50)}) + "\n"
        )
    path.rename(folder / "agent-1.jsonl")
    path.write_text(
        json.dumps({"role": "user", "content": "new file", "timestamp": stamp(60)}) + "\n",
        encoding="utf-8",
    )
    second = read_once(reader, first.cursors)
    assert sorted(texts(second)) == ["late line", "new file"]
    assert second.stats.files_moved == 1
    assert set(second.cursors) == {str(folder / "agent-1.jsonl"), str(path)}


def test_deleted_files_are_forgotten_and_new_ones_discovered(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "a").mkdir(parents=True)
    first_file = root / "a" / "one.jsonl"
    first_file.write_text(jsonl_file(2), encoding="utf-8")
    reader = make_reader("jsonl", root)
    first = read_once(reader)
    first_file.unlink()
    (root / "b" / "deep").mkdir(parents=True)
    second_file = root / "b" / "deep" / "two.jsonl"
    second_file.write_text(jsonl_file(1), encoding="utf-8")
    second = read_once(reader, first.cursors, since=BASE + timedelta(days=9), first_sight=False)
    assert texts(second) == ["text 0"]  # not first sight: the cutoff does not apply
    assert list(second.cursors) == [str(second_file)]
    assert second.stats.files_forgotten == 1


def test_first_sight_skips_content_older_than_the_cutoff(tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    old = folder / "old.jsonl"
    old.write_text(jsonl_file(4), encoding="utf-8")
    long_ago = (BASE - timedelta(days=30)).timestamp()
    os.utime(old, (long_ago, long_ago))  # untouched for a month: skipped without parsing
    mixed = folder / "mixed.jsonl"
    mixed.write_text(jsonl_file(10), encoding="utf-8")
    reader = make_reader("jsonl", folder)
    first = read_once(reader, since=BASE + timedelta(seconds=6), first_sight=True)
    assert texts(first) == ["text 6", "text 7", "text 8", "text 9"]
    assert first.stats.before_since_dropped == 6
    assert first.cursors[str(old)].position == old.stat().st_size
    assert first.cursors[str(old)].line == 4
    with old.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"role": "user", "content": "back again", "timestamp": stamp(500)}) + "\n"
        )
    second = read_once(reader, first.cursors)
    assert texts(second) == ["back again"]
    assert all_turns(second)[0].provenance.lines == (5, 5)


def test_budget_splits_a_read_and_the_cutoff_survives_for_files_not_reached(tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.jsonl").write_text(jsonl_file(40), encoding="utf-8")
    reader = make_reader("jsonl", folder)
    since = BASE + timedelta(seconds=30)
    result: ReadResult = read_once(reader, since=since, first_sight=True, max_bytes=1500)
    collected = texts(result)
    reads = 1
    assert set(result.cursors) == {str(folder / f"{n}.jsonl") for n in "abc"}
    while result.more:
        result = read_once(reader, result.cursors, first_sight=False, max_bytes=1500)
        collected += texts(result)
        reads += 1
    assert reads > 3
    assert collected == [f"text {i}" for i in range(30, 40)] * 3


def test_identical_lines_appended_later_are_not_mistaken_for_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    line = json.dumps({"role": "user", "content": "ok"}) + "\n"
    path.write_text(line, encoding="utf-8")
    reader = make_reader("jsonl", path)
    first = read_once(reader)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line)
    assert texts(read_once(reader, first.cursors)) == ["ok"]


def test_cursor_json_round_trip_after_a_real_read(tmp_path: Path) -> None:
    path = tmp_path / "run-3.ndjson"
    path.write_text(paperclip_file(5), encoding="utf-8")
    result = read_once(make_reader("paperclip", path))
    cursor = result.cursors[str(path)]
    text = cursor.to_json()
    assert FileCursor.from_json(text) == cursor
    assert FileCursor.from_json(text).to_json() == text
    assert json.loads(text)["position"] == path.stat().st_size


def test_files_with_nothing_new_keep_their_cursor_objects_and_are_not_reread(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.jsonl").write_text(jsonl_file(3), encoding="utf-8")
    reader = make_reader("jsonl", folder)
    first = read_once(reader)
    with (folder / "b.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"role": "user", "content": "new in b", "timestamp": stamp(9)}) + "\n"
        )
    second = read_once(reader, first.cursors)
    assert second.cursors[str(folder / "a.jsonl")] is first.cursors[str(folder / "a.jsonl")]
    assert second.cursors[str(folder / "b.jsonl")] is not first.cursors[str(folder / "b.jsonl")]
    assert texts(second) == ["new in b"]
    assert second.stats.files_read == 1
    assert second.stats.files_seen == 2
