"""`share_files` adds group read to the caller's own transcripts and nothing else: real files,
folders, links and FIFOs in a temporary folder. `describe` names the count and the fix."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memoryd.sources.access import GUIDE_SECTION, AccessReport, UnreadableFile, describe
from memoryd.sources.sharing import share_files

ME = os.geteuid()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def session(folder: Path, name: str, file_mode: int = 0o600) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text('{"type":"user"}\n')
    path.chmod(file_mode)
    return path


def test_a_0600_session_and_its_folders_become_group_readable_and_nothing_more(
    tmp_path: Path,
) -> None:
    root = tmp_path / "projects"
    first = session(root / "-home-ops-a", "s1.jsonl")
    subagent = session(root / "-home-ops-a" / "s1" / "subagents", "agent-1.jsonl", 0o700)
    for folder in (root, root / "-home-ops-a", root / "-home-ops-a" / "s1"):
        folder.chmod(0o700)
    (root / "-home-ops-a" / "s1" / "subagents").chmod(0o700)
    tmp_path.chmod(0o700)

    report = share_files(str(root), [str(first), str(subagent)], owner=ME)

    assert (mode(first), mode(subagent)) == (0o640, 0o740)  # read only; others never
    assert mode(root) == mode(root / "-home-ops-a") == 0o750
    assert mode(root / "-home-ops-a" / "s1" / "subagents") == 0o750
    assert mode(tmp_path) == 0o700  # above the source's root: not touched
    assert (report.shared, report.already, report.foreign, report.failed) == (6, 0, 0, [])


def test_a_second_run_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    files = [str(session(root / "p", f"s{index}.jsonl")) for index in range(3)]
    share_files(str(root), files, owner=ME)
    before = {path: os.stat(path).st_ctime_ns for path in files}

    report = share_files(str(root), files, owner=ME)

    assert (report.shared, report.already) == (0, 5)
    assert {path: os.stat(path).st_ctime_ns for path in files} == before


def test_a_group_readable_file_keeps_its_mode(tmp_path: Path) -> None:
    codex = session(tmp_path / "sessions", "rollout.jsonl", 0o644)
    report = share_files(str(tmp_path / "sessions"), [str(codex)], owner=ME)
    assert mode(codex) == 0o644
    assert report.shared == 0


def test_another_users_file_is_left_alone(tmp_path: Path) -> None:
    if ME != 0:
        pytest.skip("needs root to give a file to another user")
    theirs = session(tmp_path / "projects" / "p", "s.jsonl")
    os.chown(theirs, 65534, 65534)
    report = share_files(str(tmp_path / "projects"), [str(theirs)], owner=ME)
    assert mode(theirs) == 0o600
    assert report.foreign == 1


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    outside = session(tmp_path / "private", "secret.jsonl")
    root = tmp_path / "projects"
    root.mkdir()
    link = root / "s.jsonl"
    link.symlink_to(outside)

    report = share_files(str(root), [str(link)], owner=ME)

    assert mode(outside) == 0o600
    assert (report.shared, report.failed) == (0, [])  # the root was 0755 already


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir(mode=0o750)
    fifo = root / "s.jsonl"
    os.mkfifo(fifo, 0o600)
    report = share_files(str(root), [str(fifo)], owner=ME)  # would block if opened
    assert mode(fifo) == 0o600
    assert (report.shared, report.already) == (0, 1)


def test_a_file_gone_meanwhile_is_not_reported(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir(mode=0o750)
    report = share_files(str(root), [str(root / "gone.jsonl")], owner=ME)
    assert (report.shared, report.foreign, report.failed) == (0, 0, [])


def test_describe_names_the_count_the_owner_and_both_fixes() -> None:
    report = AccessReport(
        files=40,
        unreadable=[
            UnreadableFile(f"/home/alice/.claude/projects/p/s{i}.jsonl", 0o600, "alice")
            for i in range(3)
        ],
    )
    line = describe("coder claude-code:~/.claude/projects", report, "memoryd")
    assert line == (
        "coder claude-code:~/.claude/projects: 3 of 40 files unreadable by memoryd "
        "(mode 0600, owner alice): run memoryd as alice (the user unit, "
        "systemd/user/memoryd.service), or have alice enable memoryd-share.timer "
        f"(`memoryd share` every minute); see {GUIDE_SECTION}"
    )
    assert describe("x", AccessReport(files=5), "memoryd") is None


def test_describe_says_which_group_to_join_when_memoryd_is_not_in_it() -> None:
    outside = UnreadableFile(
        "/home/alice/.claude/projects/p/s.jsonl", 0o600, "alice", "alice", False
    )
    line = describe("coder claude-code:p", AccessReport(files=1, unreadable=[outside]), "memoryd")
    assert line is not None
    assert (
        "enable memoryd-share.timer (`memoryd share` every minute) with memoryd in group alice "
        "(or named in the files' default ACL); see "
    ) in line
