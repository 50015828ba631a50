"""Sources never leave their folder, never block, never crash on links, never lose rotated lines."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.support.shared_samples import SHARED_TRANSCRIPTS, requires_shared_transcripts
from tests.support.sources import (
    LOCKED,
    as_unprivileged,
    make_reader,
    open_folder,
    read_once,
    texts,
)

from memoryd.cli import _os_error_exit_code, main
from memoryd.daemon.status import _sources as status_sources
from memoryd.daemon.status import render_status
from memoryd.settings import parse_settings
from memoryd.sources._open import open_regular
from memoryd.sources.discovery import LINK_LOOP, LINK_OUTSIDE, NOT_REGULAR, survey

REAL_SHORT = SHARED_TRANSCRIPTS / "real" / "claude-code" / "spotter" / "short.jsonl"


def line(text: str, minute: int = 0, role: str = "user") -> str:
    stamp = f"2026-03-01T09:{minute:02d}:00Z"
    return json.dumps({"role": role, "content": text, "timestamp": stamp}) + "\n"


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    folder = open_folder()
    yield folder
    for path in folder.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(folder)


def test_a_file_symlink_out_of_the_folder_is_refused_and_logged(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "secret.jsonl").write_text(line("the launch code is 0000"), encoding="utf-8")
    source = tmp_path / "source"
    source.mkdir()
    (source / "mine.jsonl").write_text(line("hello"), encoding="utf-8")
    (source / "leak.jsonl").symlink_to(private / "secret.jsonl")
    reader = make_reader("jsonl", source)
    with capture_logs() as logs:
        result = read_once(reader)
    assert texts(result) == ["hello"]
    assert [(s.path, s.reason) for s in result.skipped] == [
        (str(source / "leak.jsonl"), LINK_OUTSIDE)
    ]
    assert any(
        e["event"] == "source.skipped" and e["path"] == str(source / "leak.jsonl") for e in logs
    )
    assert str(source / "leak.jsonl") not in result.cursors
    report = reader.lag_report({})
    assert [s.path for s in report.skipped] == [str(source / "leak.jsonl")]


def test_a_glob_does_not_follow_a_link_out_of_its_fixed_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text(line("outside"), encoding="utf-8")
    agents = tmp_path / "agents" / "a1"
    agents.mkdir(parents=True)
    (agents / "s.jsonl").write_text(line("inside"), encoding="utf-8")
    (agents / "t.jsonl").symlink_to(outside)
    (tmp_path / "agents" / "a2").symlink_to(tmp_path, target_is_directory=True)
    reader = make_reader("jsonl", str(tmp_path / "agents" / "*" / "*.jsonl"))
    result = read_once(reader)
    assert texts(result) == ["inside"]
    assert [s.reason for s in result.skipped] == [LINK_OUTSIDE]


def test_a_link_inside_the_folder_to_inside_it_is_read_once(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "raw.data").write_text(line("kept under another name"), encoding="utf-8")
    (tmp_path / "a.jsonl").write_text(line("only once"), encoding="utf-8")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")  # same file twice: read once
    (tmp_path / "store" / "c.jsonl").symlink_to(Path("raw.data"))
    result = read_once(make_reader("jsonl", tmp_path))
    assert sorted(texts(result)) == ["kept under another name", "only once"]
    assert result.skipped == []


def test_a_symlink_cycle_never_crashes_and_the_other_files_are_read(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "c.jsonl").write_text(line("fine"), encoding="utf-8")
    reader = make_reader("jsonl", tmp_path)
    for _ in range(2):  # every heartbeat, not only the first
        result = read_once(reader)
        assert texts(result) == ["fine"]
        assert {(Path(s.path).name, s.reason) for s in result.skipped} == {
            ("a.jsonl", LINK_LOOP),
            ("b.jsonl", LINK_LOOP),
        }
    looped = make_reader("jsonl", tmp_path / "a.jsonl")
    assert read_once(looped).unreadable == LINK_LOOP


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "real.jsonl").write_text(line("real"), encoding="utf-8")
    result = read_once(make_reader("jsonl", tmp_path))  # would block for ever if opened
    assert texts(result) == ["real"]
    assert [(s.path, s.reason) for s in result.skipped] == [(str(fifo), NOT_REGULAR)]
    assert read_once(make_reader("jsonl", fifo)).unreadable is not None
    with pytest.raises(OSError, match="not a regular file"):
        open_regular(fifo)  # the guard at open time, for a FIFO swapped in after the walk


def test_an_unreadable_sub_folder_is_logged_and_its_cursors_kept(shared_tmp: Path) -> None:
    (shared_tmp / "open.jsonl").write_text(line("open"), encoding="utf-8")
    locked = shared_tmp / "locked"
    locked.mkdir()
    (locked / "inner.jsonl").write_text(line("inner"), encoding="utf-8")
    for path in shared_tmp.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    reader = make_reader("jsonl", shared_tmp)
    first = read_once(reader)
    assert sorted(texts(first)) == ["inner", "open"]
    locked.chmod(LOCKED)  # root's; `nobody` can no longer list it

    def read_as_nobody() -> tuple[list[tuple[str, str]], list[str], bool, list[str]]:
        with capture_logs() as logs:
            second = read_once(reader, first.cursors)
        report = reader.lag_report(first.cursors)
        return (
            [(s.path, s.reason) for s in second.skipped],
            sorted(second.cursors),
            second.unreadable is None,
            [e["path"] for e in logs if e["event"] == "source.skipped"]
            + [s.path for s in report.skipped],
        )

    skipped, cursors, root_readable, logged = as_unprivileged(read_as_nobody)
    assert root_readable
    assert skipped == [(str(locked), "cannot list folder: Permission denied")]
    assert cursors == sorted(first.cursors)  # inner.jsonl is not forgotten
    assert logged == [str(locked), str(locked)]


def test_an_unreadable_source_root_is_reported_and_keeps_its_cursors(shared_tmp: Path) -> None:
    home = shared_tmp / "home"
    source = home / "agent"
    source.mkdir(parents=True)
    (source / "s.jsonl").write_text(line("said"), encoding="utf-8")
    for path in shared_tmp.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    reader = make_reader("jsonl", source)
    first = read_once(reader)
    home.chmod(LOCKED)  # Debian's default home: the source below it cannot be reached

    def read_as_nobody() -> tuple[str | None, list[str], str | None, int]:
        second = read_once(reader, first.cursors)
        report = reader.lag_report(first.cursors)
        return second.unreadable, sorted(second.cursors), report.unreadable, len(report.lags)

    unreadable, cursors, reported, files = as_unprivileged(read_as_nobody)
    assert unreadable == "Permission denied"
    assert reported == "Permission denied"
    assert cursors == sorted(first.cursors)
    assert files == 0


def test_rotation_to_a_rejected_name_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line("first", 1), encoding="utf-8")
    reader = make_reader("jsonl", tmp_path)
    first = read_once(reader)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line("written before the rotation", 2))
    path.rename(tmp_path / "s.jsonl.1")  # a name the format does not read
    path.write_text(line("after the rotation", 3), encoding="utf-8")
    with capture_logs() as logs:
        second = read_once(reader, first.cursors)
    assert texts(second) == ["written before the rotation", "after the rotation"]
    assert sorted(second.cursors) == [str(path)]
    assert any(e["event"] == "source.rotated_read" and e["renamed"] for e in logs)
    third = read_once(reader, second.cursors)
    assert texts(third) == []


def test_copytruncate_loses_nothing_even_after_new_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line("first", 1) + line("second", 2), encoding="utf-8")
    reader = make_reader("jsonl", tmp_path)
    first = read_once(reader)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line("written before the copy", 3))
    shutil.copyfile(path, tmp_path / "s.jsonl-20260301")
    with path.open("r+", encoding="utf-8") as handle:
        handle.truncate(0)  # same inode, emptied in place
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line("new one after the truncation, long enough to pass the cursor", 4))
        handle.write(line("and another", 5))
    second = read_once(reader, first.cursors)
    assert texts(second) == [
        "written before the copy",
        "new one after the truncation, long enough to pass the cursor",
        "and another",
    ]
    assert texts(read_once(reader, second.cursors)) == []


def test_rotation_of_a_real_transcript_loses_nothing(tmp_path: Path) -> None:
    if not REAL_SHORT.is_file():
        pytest.skip("the shared real transcripts are not beside the clone")
    lines = REAL_SHORT.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    path = folder / "session.jsonl"
    path.write_bytes(b"".join(lines[:half]))
    reader = make_reader("claude-code", tmp_path / "projects")
    whole = read_once(make_reader("claude-code", REAL_SHORT))
    first = read_once(reader)
    with path.open("ab") as handle:
        handle.write(b"".join(lines[half:]))
    path.rename(folder / "session.jsonl.1")
    second = read_once(reader, first.cursors)
    assert texts(first) + texts(second) == texts(whole)
    assert len(texts(whole)) > 2


@requires_shared_transcripts
def test_a_real_transcript_linked_from_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "linked.jsonl").symlink_to(REAL_SHORT)
    reader = make_reader("claude-code", tmp_path)
    result = read_once(reader)
    assert result.conversations == []
    assert [s.reason for s in result.skipped] == [LINK_OUTSIDE]
    inside = survey(str(REAL_SHORT.parent), lambda folder, name: name.endswith(".jsonl"))
    assert str(REAL_SHORT) in inside.files


def test_check_and_init_report_an_unreadable_source_root_and_exit_78(shared_tmp: Path) -> None:
    home = shared_tmp / "home"
    (home / "agent").mkdir(parents=True)
    for folder in ("store", "state"):
        (shared_tmp / folder).mkdir()
        (shared_tmp / folder).chmod(0o777)
    home.chmod(LOCKED)  # root's home: `nobody` cannot enter it
    config = shared_tmp / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{shared_tmp / "store"}"\n'
        f'[state]\npath = "{shared_tmp / "state"}"\n'
        '[llm]\nprovider = "markers"\n'
        '[[agents]]\nname = "a"\n'
        f'[[agents.sources]]\nformat = "jsonl"\npath = "{home / "agent"}"\n',
        encoding="utf-8",
    )
    config.chmod(0o644)

    # Both commands run once as root first (on a copy of the configuration naming another
    # store), so that every module is imported: `nobody` may not read this Python's files.
    warm = shared_tmp / "warm.toml"
    warm.write_text(
        config.read_text(encoding="utf-8").replace(
            str(shared_tmp / "store"), str(shared_tmp / "warm")
        ),
        encoding="utf-8",
    )
    for command in ("check", "init"):
        main(["--config", str(warm), command])

    def run_as_nobody() -> tuple[int, int, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            checked = main(["--config", str(config), "check"])
            initialised = main(["--config", str(config), "init"])
        return checked, initialised, out.getvalue() + err.getvalue()

    checked, initialised, said = as_unprivileged(run_as_nobody)
    assert (checked, initialised) == (78, 78)
    problem = f"At 'agents[\"a\"].sources[0].path': {home / 'agent'} is not readable"
    assert said.count(problem) >= 2, said  # printed by each, and in the JSON event
    assert "Traceback" not in said
    assert not (shared_tmp / "store" / ".git").exists()


def test_an_os_error_in_a_one_shot_command_is_a_json_event_and_a_clean_exit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state" / "memoryd.lock").mkdir(parents=True)  # the lock cannot be opened
    config = tmp_path / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{tmp_path / "store"}"\n[state]\npath = "{tmp_path / "state"}"\n'
        '[llm]\nprovider = "markers"\n',
        encoding="utf-8",
    )
    assert main(["--config", str(config), "--log-format", "json", "init"]) == 0
    capsys.readouterr()
    code = main(["--config", str(config), "--log-format", "json", "heartbeat"])
    captured = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in captured.err
    events = [json.loads(row) for row in captured.err.splitlines() if row.startswith("{")]
    failed = [e for e in events if e["event"] == "command.failed"]
    assert failed and failed[0]["errno"] == "EISDIR"
    assert failed[0]["path"] == str(tmp_path / "state" / "memoryd.lock")


@pytest.mark.parametrize(
    ("number", "code"),
    [(errno.ENOSPC, 75), (errno.EDQUOT, 75), (errno.EROFS, 78), (errno.EACCES, 78), (0, 1)],
)
def test_os_errors_map_to_the_exit_code_of_what_fixes_them(number: int, code: int) -> None:
    assert _os_error_exit_code(OSError(number, "x")) == code


def test_status_names_an_unreadable_source_and_what_a_source_skipped(shared_tmp: Path) -> None:
    home = shared_tmp / "home"
    (home / "agent").mkdir(parents=True)
    linked = shared_tmp / "linked"
    linked.mkdir()
    (linked / "out.jsonl").symlink_to(shared_tmp / "elsewhere.jsonl")
    (shared_tmp / "elsewhere.jsonl").write_text(line("x"), encoding="utf-8")
    for path in (home, home / "agent", linked):
        path.chmod(0o755)
    settings = parse_settings(
        {
            "store": {"path": str(shared_tmp / "store")},
            "llm": {"provider": "markers"},
            "agents": [
                {
                    "name": "a",
                    "sources": [
                        {"format": "jsonl", "path": str(home / "agent")},
                        {"format": "jsonl", "path": str(linked)},
                    ],
                }
            ],
        }
    )
    home.chmod(LOCKED)
    unreadable, skipping = as_unprivileged(lambda: status_sources(settings, {}))
    assert unreadable["unreadable"] == "Permission denied"
    assert skipping["unreadable"] is None
    assert skipping["skipped"] == [{"path": str(linked / "out.jsonl"), "reason": LINK_OUTSIDE}]
    text = render_status(_bare_report([unreadable, skipping]))
    assert f"source a jsonl:{home / 'agent'}: UNREADABLE (Permission denied)" in text
    assert f"  skipped {linked / 'out.jsonl'}: {LINK_OUTSIDE}" in text


def test_status_text_lists_a_few_skipped_files_and_counts_the_rest() -> None:
    skipped = [{"path": f"/t/{n}.jsonl", "reason": "Permission denied"} for n in range(40)]
    source: dict[str, object] = {
        "agent": "a",
        "source": "jsonl:/t",
        "unreadable": None,
        "files": 40,
        "lag_bytes": 0,
        "skipped": skipped,
    }
    text = render_status(_bare_report([source]))
    shown = [line for line in text.splitlines() if line.startswith("  skipped ")]
    assert shown == [f"  skipped /t/{n}.jsonl: Permission denied" for n in range(5)]
    assert "  ... and 35 more skipped (`memoryd status --json`)" in text


def _bare_report(sources: list[dict[str, object]]) -> dict[str, object]:
    return {
        "now": "n",
        "store": "s",
        "lock_holder_pid": None,
        "last_heartbeat": None,
        "llm_unusable": None,
        "unfinished_runs": [],
        "next_runs": {
            "heartbeat": None,
            "heartbeat_overdue": False,
            "rewrite": "r",
            "rewrite_catch_up_at_start": False,
        },
        "sources": sources,
        "spend_today": {"day": "d", "usd": 0, "budget_usd": 0, "calls": 0, "exhausted": False},
        "quarantined": [],
        "failing_chunks": 0,
        "pending_entities": [],
        "last_rewrite": {"succeeded_at": None},
        "review_held": 0,
        "reading": {"index_failures": 0, "index_paused_until": None, "reads_queued": 0},
    }


def test_a_heartbeat_names_an_unreadable_source_and_exits_78(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")  # unreadable even for root: a symlink loop
    logs = tmp_path / "logs"
    logs.mkdir()
    said_now = {  # inside the backfill window of a heartbeat run now
        "role": "user",
        "content": "remember: person Jane Doe: Joined Acme as CTO",
        "timestamp": datetime.now(UTC).isoformat(),
    }
    (logs / "a.jsonl").write_text(json.dumps(said_now) + "\n", encoding="utf-8")
    config = tmp_path / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{tmp_path / "store"}"\n[state]\npath = "{tmp_path / "state"}"\n'
        '[llm]\nprovider = "markers"\n'
        f'[[agents]]\nname = "a"\n[[agents.sources]]\nformat = "jsonl"\npath = "{logs}"\n'
        f'[[agents.sources]]\nformat = "jsonl"\npath = "{loop}"\n',
        encoding="utf-8",
    )
    assert main(["--config", str(config), "--log-format", "json", "check"]) == 78
    checked = capsys.readouterr()
    assert f"At 'agents[\"a\"].sources[1].path': {loop} is not readable" in checked.out
    assert main(["--config", str(config), "--log-format", "json", "init"]) == 78
    capsys.readouterr()
    (tmp_path / "loop").unlink()
    assert main(["--config", str(config), "--log-format", "json", "init"]) == 0
    loop.symlink_to(tmp_path / "loop")
    capsys.readouterr()
    code = main(["--config", str(config), "--log-format", "json", "heartbeat"])
    said = capsys.readouterr()
    assert code == 78
    assert "+1 fact," in said.out  # the readable source was read and filed
    assert f"source jsonl:{loop} UNREADABLE ({LINK_LOOP}): nothing was read from it" in said.out
    events = [json.loads(row) for row in said.err.splitlines() if row.startswith("{")]
    assert any(e["event"] == "source.unreadable" and e["reason"] == LINK_LOOP for e in events)
    finished = next(e for e in events if e["event"] == "heartbeat.finished")
    assert finished["sources_unreadable"] == [f"jsonl:{loop}"]


def test_an_unreadable_file_is_logged_when_read_and_shown_by_status(shared_tmp: Path) -> None:
    (shared_tmp / "open.jsonl").write_text(line("open"), encoding="utf-8")
    secret = shared_tmp / "secret.jsonl"
    secret.write_text(line("not for memoryd"), encoding="utf-8")
    (shared_tmp / "open.jsonl").chmod(0o644)
    secret.chmod(0o600 if os.geteuid() == 0 else 0o000)
    reader = make_reader("jsonl", shared_tmp)

    def read_as_nobody() -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
        with capture_logs() as logs:
            result = read_once(reader)
        logged = [(e["path"], e["reason"]) for e in logs if e["event"] == "source.skipped"]
        shown = [(s.path, s.reason) for s in reader.lag_report(result.cursors).skipped]
        return texts(result), logged, shown

    said, logged, shown = as_unprivileged(read_as_nobody)
    assert said == ["open"]
    assert logged == [(str(secret), "Permission denied")]
    assert shown == [(str(secret), "cannot read the file: permission denied")]
