"""Claude Code writes every session file 0600: under the documented set-ups the next heartbeat
reads a new one all the same, and `check` and `status` say when one cannot be read and what to do.

Real users (created with `useradd`, so the tests run only as root), real files written by the
agent's user with Claude Code's mode, real `memoryd` processes run as each user with `setpriv`,
the offline markers provider as the model:

- the user-unit set-up: memoryd runs as the agent's own user and reads its 0600 files;
- the system-service set-up: memoryd runs as its own user, a member of the agent's group; the
  new file is skipped (`source.skipped`, "Permission denied"), `status` exits 78 naming the
  count, the owner and the fix, `check` warns; after `memoryd share` run as the agent's user,
  `status` is clean and the next heartbeat files the session.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.cli import json_lines
from tests.support.users import (
    as_user,
    ensure_user,
    memoryd_as,
    require_root_tools,
    shared_folder,
    write_as,
)

from memoryd.errors import EXIT_CONFIG, EXIT_OK

AGENT_USER = "mdtest-alice"
SERVICE_USER = "mdtest-memoryd"
SESSION = "0f9c2f6e-2c1d-4d7e-9a55-7f1b0c3d4e5f"


def claude_line(text: str) -> str:
    record = {
        "type": "user",
        "uuid": "u-1",
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": SESSION,
        "timestamp": "2026-03-01T10:00:00Z",
        "cwd": "/home/alice/project",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(record) + "\n"


@dataclass
class Host:
    root: Path
    projects: Path  # the agent's ~/.claude/projects
    config: Path

    @property
    def session(self) -> Path:
        return self.projects / "-home-alice-project" / f"{SESSION}.jsonl"


def make_host(root: Path, memoryd_user: str) -> Host:
    """The agent's Claude Code folders (0755, as Claude Code makes them), and memoryd's store,
    state and configuration owned by `memoryd_user`."""
    agent = ensure_user(AGENT_USER)
    service = ensure_user(memoryd_user)
    projects = root / "alice" / ".claude" / "projects"
    (projects / "-home-alice-project").mkdir(parents=True)
    for folder in (
        root / "alice",
        root / "alice" / ".claude",
        projects,
        projects / "-home-alice-project",
    ):
        folder.chmod(0o755)
        os.chown(folder, agent.pw_uid, agent.pw_gid)
    home = root / "memoryd"
    home.mkdir(mode=0o750)
    os.chown(home, service.pw_uid, service.pw_gid)
    config = root / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{home}/store"\n[state]\npath = "{home}/state"\n'
        '[llm]\nprovider = "markers"\n[backfill]\nsince = "all"\n'
        f'[[agents]]\nname = "coder"\n  [[agents.sources]]\n  format = "claude-code"\n'
        f'  path = "{projects}"\n',
        encoding="utf-8",
    )
    config.chmod(0o644)  # the agent's user reads it too, to run `memoryd share`
    return Host(root, projects, config)


def memoryd(user: str, host: Host, *args: str) -> tuple[int, str, list[dict[str, object]]]:
    done = memoryd_as(user, "--config", str(host.config), *args, cwd=host.root)
    return done.returncode, done.stdout, json_lines(done.stderr)


def facts_added(events: list[dict[str, object]]) -> int:
    (finished,) = [e for e in events if e["event"] == "heartbeat.finished"]
    added = finished["facts_added"]
    assert isinstance(added, int)
    return added


@pytest.fixture
def root() -> Iterator[Path]:
    require_root_tools()
    with shared_folder() as folder:
        yield folder


def test_the_user_unit_set_up_reads_a_new_0600_session(root: Path) -> None:
    host = make_host(root, memoryd_user=AGENT_USER)  # memoryd runs as the agent's own user
    assert memoryd(AGENT_USER, host, "init")[0] == EXIT_OK
    write_as(
        AGENT_USER, host.session, claude_line("remember: person Jane Doe: Joined Acme"), mode=0o600
    )
    assert host.session.stat().st_mode & 0o777 == 0o600

    code, _, events = memoryd(AGENT_USER, host, "heartbeat")

    assert code == EXIT_OK, events
    assert not [e for e in events if e["event"] == "source.skipped"]
    assert facts_added(events) == 1
    status_code, status, _ = memoryd(AGENT_USER, host, "status")
    assert status_code == EXIT_OK
    assert "UNREADABLE" not in status


def test_the_system_service_reads_a_new_0600_session_once_the_owner_shares_it(root: Path) -> None:
    host = make_host(root, memoryd_user=SERVICE_USER)
    ensure_user(SERVICE_USER, groups=(AGENT_USER,))  # the guide's group method, section 2.5
    assert memoryd(SERVICE_USER, host, "init")[0] == EXIT_OK
    write_as(
        AGENT_USER, host.session, claude_line("remember: person Jane Doe: Joined Acme"), mode=0o600
    )

    # Before: skipped by the heartbeat, counted with its fix by status and check.
    code, _, events = memoryd(SERVICE_USER, host, "heartbeat")
    skipped = [e for e in events if e["event"] == "source.skipped"]
    assert [(e["path"], e["reason"]) for e in skipped] == [(str(host.session), "Permission denied")]
    assert facts_added(events) == 0
    status_code, status, _ = memoryd(SERVICE_USER, host, "status")
    assert status_code == EXIT_CONFIG
    (line,) = [text for text in status.splitlines() if text.startswith("UNREADABLE FILES")]
    assert f"1 of 1 file unreadable by {SERVICE_USER} (mode 0600, owner {AGENT_USER})" in line
    assert f"run memoryd as {AGENT_USER}" in line
    assert f"have {AGENT_USER} enable memoryd-share.timer" in line
    assert "docs/operators-guide.md#" in line
    json_code, report, _ = memoryd(SERVICE_USER, host, "status", "--json")
    assert json_code == EXIT_CONFIG
    (entry,) = json.loads(report)["unreadable_files"]
    assert (entry["files"], entry["unreadable"], entry["owners"], entry["modes"]) == (
        1,
        1,
        [AGENT_USER],
        ["0600"],
    )
    check_code, check, _ = memoryd(SERVICE_USER, host, "check")
    assert check_code == EXIT_OK  # a warning: the daemon's ExecStartPre must not fail on it
    assert "warning: At 'agents': coder claude-code:" in check
    assert "1 of 1 file unreadable" in check

    # The agent's user shares its files (what memoryd-share.timer runs every minute).
    share_code, shared, _ = memoryd(AGENT_USER, host, "share")
    assert share_code == EXIT_OK
    assert "shared 1," in shared
    assert host.session.stat().st_mode & 0o777 == 0o640  # group read, nothing for others

    # After: status clean, and the next heartbeat reads the session.
    status_code, status, _ = memoryd(SERVICE_USER, host, "status")
    assert status_code == EXIT_OK
    assert "UNREADABLE" not in status
    check_code, check, _ = memoryd(SERVICE_USER, host, "check")
    assert (check_code, "unreadable" in check) == (EXIT_OK, False)
    code, _, events = memoryd(SERVICE_USER, host, "heartbeat")
    assert code == EXIT_OK, events
    assert not [e for e in events if e["event"] == "source.skipped"]
    assert facts_added(events) == 1

    # Run again (the timer's steady state): nothing to do; the file, its folder and the root.
    share_code, shared, _ = memoryd(AGENT_USER, host, "share")
    assert (share_code, "shared 0, already shared 3," in shared) == (EXIT_OK, True), shared


def posix_acl(*entries: tuple[int, int, int]) -> bytes:
    """The kernel's `system.posix_acl_*` value: version 2, then (tag, permissions, id) entries
    in tag order (the `setfacl` tool is not needed, nor installed everywhere)."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


def test_share_also_repairs_the_guides_default_acl(root: Path) -> None:
    # The guide's ACL method: memoryd is not in the agent's group; a default ACL names it. A
    # 0600 file's ACL mask is then ---, so the entry gives nothing until share sets the mask.
    host = make_host(root, memoryd_user=SERVICE_USER)
    service = ensure_user(SERVICE_USER)
    subprocess.run(["gpasswd", "-d", SERVICE_USER, AGENT_USER], capture_output=True, check=False)
    undefined = 0xFFFFFFFF
    default = posix_acl(
        (0x01, 7, undefined),  # user::rwx
        (0x02, 5, service.pw_uid),  # user:memoryd:r-x
        (0x04, 0, undefined),  # group::---
        (0x10, 5, undefined),  # mask::r-x
        (0x20, 0, undefined),  # other::---
    )
    try:
        os.setxattr(host.session.parent, "system.posix_acl_default", default)
    except OSError as error:
        pytest.skip(f"this file system takes no ACL: {error}")
    assert memoryd(SERVICE_USER, host, "init")[0] == EXIT_OK
    write_as(
        AGENT_USER, host.session, claude_line("remember: person Jane Doe: Joined Acme"), mode=0o600
    )
    code, status, _ = memoryd(SERVICE_USER, host, "status")
    assert code == EXIT_CONFIG
    assert f"with {SERVICE_USER} in group {AGENT_USER} (or named in the files' default" in status

    assert memoryd(AGENT_USER, host, "share")[0] == EXIT_OK

    assert memoryd(SERVICE_USER, host, "status")[0] == EXIT_OK
    code, _, events = memoryd(SERVICE_USER, host, "heartbeat")
    assert code == EXIT_OK, events
    assert facts_added(events) == 1
    # The owning group's own entry is still ---: only the named memoryd entry took effect.
    ensure_user("mdtest-bob", groups=(AGENT_USER,))
    assert as_user("mdtest-bob", "cat", str(host.session), cwd=root).returncode != 0
