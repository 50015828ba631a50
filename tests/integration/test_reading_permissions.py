"""Readers never need to write: `context` and `search` as an agent of memoryd's group and in a
read-only sandbox, real processes over a real store and state (operator's guide 2.6).

The store and state are made by real `memoryd init` and `heartbeat` processes under the unit's
`UMask=0027`. The agent is a real user made for the test (`useradd`, run with `setpriv`); the
sandbox a mount namespace where the whole tree, home included, is mounted read-only
(`unshare`). Each skips with its reason where the machine cannot provide it.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.support.cli import write_config
from tests.support.reading import child_environment, write_transcript

import memoryd
from memoryd.errors import EXIT_OK

pytestmark = pytest.mark.slow

SOURCE_ROOT = str(Path(memoryd.__file__).resolve().parents[1])
READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


def run(
    folder: Path,
    *args: str,
    umask: int = 0o027,
    wrap: Sequence[str] = (),
    python: str = sys.executable,
    environ: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    command = [python, "-m", "memoryd", "--config", str(folder / "memoryd.toml")]
    return subprocess.run(
        [*wrap, *command, "--log-format", "json", *args],
        cwd=folder,
        env=environ or child_environment(folder),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        umask=umask,
    )


def build(folder: Path) -> None:
    """A store and state after `init` and one heartbeat, made as the daemon makes them."""
    write_config(folder)
    write_transcript(folder)
    for command in ("init", "heartbeat"):
        result = run(folder, command)
        assert result.returncode == EXIT_OK, result.stderr


def events(stderr: str) -> dict[str, dict[str, object]]:
    found = {}
    for line in stderr.splitlines():
        event = json.loads(line)
        found[str(event["event"])] = event
    return found


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_state_directory_and_queue_follow_the_umask_and_the_database_stays_private(
    tmp_path: Path,
) -> None:
    build(tmp_path)
    state = tmp_path / "state"
    assert mode(state) == 0o750  # the group passes through to the queue
    assert mode(state / "queue") == 0o2770  # the group appends its reads
    assert mode(state / "state.db") == 0o600
    assert mode(tmp_path / "store" / "life/areas/people/jane-doe/summary.md") == 0o640


@pytest.fixture
def agent() -> Iterator[tuple[str, Path]]:
    """A user in a new group (memoryd's), and a setgid folder of that group to build in."""
    if os.geteuid() != 0:
        pytest.skip("making a user needs root")
    if not all(shutil.which(tool) for tool in ("useradd", "groupadd", "userdel", "setpriv")):
        pytest.skip("useradd, groupadd, userdel or setpriv is missing")
    suffix = uuid.uuid4().hex[:8]
    group, user = f"mdgrp{suffix}", f"mdagent{suffix}"
    subprocess.run(["groupadd", group], check=True)
    subprocess.run(["useradd", "-M", "-N", "-G", group, "-s", "/bin/sh", user], check=True)
    base = Path(tempfile.mkdtemp(prefix="memoryd-group-"))
    try:
        shutil.chown(base, group=group)
        base.chmod(0o2750)  # what the daemon makes below is memoryd's group's, as under systemd
        yield user, base
    finally:
        shutil.rmtree(base, ignore_errors=True)
        subprocess.run(["userdel", user], check=False)
        subprocess.run(["groupdel", group], check=False)


def as_user(user: str) -> tuple[list[str], str]:
    """The `setpriv` prefix running as `user` with its groups, and a Python it can run (this
    one, or the system's of the same version, when this one sits in a folder it cannot
    enter)."""
    gid = pwd.getpwnam(user).pw_gid
    wrap = ["setpriv", f"--reuid={user}", f"--regid={gid}", "--init-groups"]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version) or ""):
        probe = subprocess.run(
            [*wrap, python, "-c", "import memoryd, mcp, pydantic"],
            env={"PATH": os.environ["PATH"], "PYTHONPATH": pythonpath()},
            capture_output=True,
            check=False,
        )
        if python and probe.returncode == 0:
            return wrap, python
    pytest.skip(f"no Python that {user} can run imports memoryd")


def pythonpath() -> str:
    return os.pathsep.join([SOURCE_ROOT, *(p for p in sys.path if "site-packages" in p)])


def test_an_agent_of_memoryds_group_reads_and_its_reads_are_queued(
    agent: tuple[str, Path],
) -> None:
    user, base = agent
    build(base)
    home = base / "home"
    home.mkdir()
    shutil.chown(home, user=user)
    wrap, python = as_user(user)
    environ = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": pythonpath()}

    context = run(
        base, "context", "--agent", "ops", "--format", "json", wrap=wrap, python=python,
        environ=environ,
    )  # fmt: skip
    assert context.returncode == EXIT_OK, context.stderr
    answer = json.loads(context.stdout)
    assert "Jane Doe" in answer["text"]
    assert answer["reads"]["queued"] is True and answer["reads"]["facts"] >= 1
    search = run(
        base, "search", "Lisbon", "--json", "--agent", "ops", wrap=wrap, python=python,
        environ=environ,
    )  # fmt: skip
    assert search.returncode == EXIT_OK, search.stderr
    assert json.loads(search.stdout)[0]["id"] == "jane-doe-002"
    assert events(search.stderr)["search.served"]["reads_queued"] is True
    # The agent's reads go to a file of its own, so its owner says who read (docs/agents.md).
    uid = pwd.getpwnam(user).pw_uid
    own = base / "state" / "queue" / f"reads.u{uid}.jsonl"
    assert own.stat().st_uid == uid
    assert '"fact": "jane-doe-002"' in own.read_text(encoding="utf-8")
    # The agent could not write the state directory: its index is in its own cache.
    assert list((home / ".cache" / "memoryd").glob("*/search.sqlite"))


def sandbox(folder: Path) -> list[str]:
    """The prefix running a command with `folder` mounted read-only, or a skip."""
    if not shutil.which("unshare"):
        pytest.skip("unshare is missing")
    wrap = ["unshare", "-rm", "sh", "-c", READ_ONLY, "sh", str(folder)]
    probe = subprocess.run([*wrap, "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses a read-only mount namespace: {probe.stderr.strip()}")
    return wrap


def test_in_a_read_only_sandbox_context_and_search_answer_and_say_reads_were_not_queued(
    tmp_path: Path,
) -> None:
    build(tmp_path)
    wrap = sandbox(tmp_path)
    (tmp_path / "state" / "search.sqlite").unlink()  # nothing to reuse: it must be built
    environ = child_environment(tmp_path / "home")  # a home that does not exist either
    environ["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    before = sorted(str(path) for path in tmp_path.rglob("*"))

    context = run(
        tmp_path, "context", "--agent", "ops", "--format", "json", wrap=wrap, environ=environ
    )
    assert context.returncode == EXIT_OK, context.stderr
    answer = json.loads(context.stdout)
    assert "Jane Doe" in answer["text"]
    assert answer["reads"]["queued"] is False and "Read-only" in answer["reads"]["error"]
    assert "reads.not_recorded" in events(context.stderr)

    search = run(tmp_path, "search", "Lisbon", "--json", wrap=wrap, environ=environ)
    assert search.returncode == EXIT_OK, search.stderr
    assert json.loads(search.stdout)[0]["id"] == "jane-doe-002"
    seen = events(search.stderr)
    assert seen["search.served"]["reads_queued"] is False and "reads.not_recorded" in seen
    assert sorted(str(path) for path in tmp_path.rglob("*")) == before  # nothing written


async def _mcp_session(folder: Path, wrap: list[str]) -> dict[str, Any]:
    server = StdioServerParameters(
        command=wrap[0],
        args=[*wrap[1:], sys.executable, "-m", "memoryd", "--config", "memoryd.toml", "mcp"],
        env={**child_environment(folder / "home"), "XDG_CACHE_HOME": str(folder / "cache")},
        cwd=str(folder),
    )
    with (folder.parent / "mcp-stderr.log").open("w", encoding="utf-8") as errors:
        async with (
            stdio_client(server, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            search = await session.call_tool("search", {"query": "Lisbon"})
            context = await session.call_tool("context", {})
            remember = await session.call_tool("remember", {"text": "Likes tea"})
    return {"search": search, "context": context, "remember": remember}


def test_in_a_read_only_sandbox_the_mcp_tools_answer_and_say_reads_were_not_queued(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tree"
    folder.mkdir()
    build(folder)
    wrap = sandbox(folder)
    seen = anyio.run(_mcp_session, folder, wrap)
    search, context = seen["search"], seen["context"]
    assert not search.is_error and search.structured_content["hits"][0]["id"] == "jane-doe-002"
    assert search.structured_content["reads"]["queued"] is False
    assert not context.is_error and "Jane Doe" in context.structured_content["text"]
    assert context.structured_content["reads"]["queued"] is False
    assert seen["remember"].is_error  # nowhere to queue it: said, not pretended
