"""Agents tied to the OS user they run as (`[[agents]] user`): real users write real queue
files; a heartbeat files only what the agent's own user wrote into its folder, and the reads
claimed for it count only from files that user owns. Without `user`, nothing changes."""

from __future__ import annotations

import grp
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from tests.support.cli import json_lines, memoryd
from tests.support.users import as_user, ensure_user, require_root_tools, shared_folder

from memoryd.errors import EXIT_CONFIG
from memoryd.reading.accesses import claim_reads
from memoryd.reading.remember import remembered_root

pytestmark = pytest.mark.slow

GROUP = "memoryd-ident-test"
DAY = datetime.now(UTC).date().isoformat()  # inside the backfill window


@pytest.fixture
def site() -> Iterator[Path]:
    require_root_tools()
    subprocess.run(["groupadd", "-f", GROUP], check=True, capture_output=True)
    for name in ("mdalice", "mdbob"):
        ensure_user(name, groups=(GROUP,))
    with shared_folder() as folder:
        yield folder


def _config(site: Path, *, tied: bool) -> Path:
    user = 'user = "mdalice"\n' if tied else ""
    config = site / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{site / "store"}"\n[state]\npath = "{site / "state"}"\n'
        '[llm]\nprovider = "markers"\n'
        f'[[agents]]\nname = "alice"\n{user}[[agents]]\nname = "free"\n',
        encoding="utf-8",
    )
    assert memoryd("init", cwd=site, env={"MEMORYD_CONFIG": str(config)}).returncode == 0
    queue = site / "state" / "queue"
    os.chown(queue, 0, _gid())  # memoryd's group, as the operator's guide sets it up
    queue.chmod(0o2770)
    (site / "state").chmod(0o755)
    return config


def _gid() -> int:
    return grp.getgrnam(GROUP).gr_gid


def _as(user: str, site: Path, code: str) -> None:
    script = (
        "import sys\nfrom datetime import date, datetime\nfrom pathlib import Path\n"
        "from memoryd.reading.accesses import record_reads\n"
        "from memoryd.reading.remember import queue_memory\n"
        "state = Path(sys.argv[1])\n" + code
    )
    done = as_user(user, sys.executable, "-c", script, str(site / "state"), cwd=site)
    assert done.returncode == 0, done.stdout + done.stderr


def _remember(user: str, site: Path, agent: str, fact: str) -> None:
    _as(
        user,
        site,
        f"queue_memory(state, agent={agent!r}, text={fact!r}, entity='Jane Doe', "
        f"kind='person', at=datetime.fromisoformat('{DAY}T09:00:00+00:00'))\n",
    )


def _read(user: str, site: Path, agent: str, fact_id: str) -> None:
    _as(
        user,
        site,
        f"print(record_reads(state, [{fact_id!r}], agent={agent!r}, "
        f"day=date.fromisoformat({DAY!r})))\n",
    )


def _heartbeat(site: Path, config: Path) -> tuple[str, list[dict[str, object]]]:
    done = memoryd(
        "--log-format", "json", "heartbeat", cwd=site, env={"MEMORYD_CONFIG": str(config)}
    )
    filed = "\n".join(
        path.read_text(encoding="utf-8") for path in (site / "store").rglob("items.json")
    )
    return filed, json_lines(done.stderr)


def test_an_unknown_user_is_a_configuration_error(site: Path) -> None:
    config = site / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{site / "store"}"\n[llm]\nprovider = "markers"\n'
        '[[agents]]\nname = "alice"\nuser = "no-such-user-memoryd"\n',
        encoding="utf-8",
    )
    done = memoryd("check", cwd=site, env={"MEMORYD_CONFIG": str(config)})
    assert done.returncode == EXIT_CONFIG
    assert "At 'agents[\"alice\"].user'" in done.stderr + done.stdout
    assert "no OS user 'no-such-user-memoryd'" in done.stderr + done.stdout


def test_a_tied_agent_files_only_its_own_users_memories(site: Path) -> None:
    config = _config(site, tied=True)
    _remember("mdalice", site, "alice", "Prefers green tea")
    _remember("mdbob", site, "alice", "Owes mdbob a thousand dollars")
    folder = remembered_root(site / "state") / "alice"
    owners = {path.name: path.stat().st_uid for path in folder.iterdir()}
    alice, bob = (ensure_user(name).pw_uid for name in ("mdalice", "mdbob"))
    # each writer appends to a file of its own, so the owner says who wrote it
    assert owners == {f"{DAY}.u{alice}.jsonl": alice, f"{DAY}.u{bob}.jsonl": bob}
    filed, logs = _heartbeat(site, config)
    assert "Prefers green tea" in filed, [(e["event"], e.get("reason")) for e in logs]
    assert "thousand dollars" not in filed
    refused = [entry for entry in logs if entry["event"] == "remember.file_refused"]
    assert [(entry["owner"], entry["expected"]) for entry in refused] == [(bob, alice)]
    again, _logs = _heartbeat(site, config)  # refused for good, never filed later
    assert "thousand dollars" not in again


def test_an_agent_without_user_files_every_group_members_memories(site: Path) -> None:
    config = _config(site, tied=False)
    _remember("mdalice", site, "alice", "Prefers green tea")
    _remember("mdbob", site, "alice", "Owes mdbob a thousand dollars")
    filed, logs = _heartbeat(site, config)
    assert "Prefers green tea" in filed
    assert "thousand dollars" in filed  # agents sharing a group cannot be told apart
    assert not [entry for entry in logs if entry["event"] == "remember.file_refused"]


def test_reads_count_for_a_tied_agent_only_from_its_users_files(site: Path) -> None:
    _config(site, tied=True)
    _read("mdalice", site, "alice", "f-alice")
    _read("mdbob", site, "alice", "f-bob-as-alice")
    _read("mdbob", site, "free", "f-bob-as-free")
    alice = ensure_user("mdalice").pw_uid
    claimed = claim_reads(site / "state", {"alice": alice, "free": None})
    assert sorted(fact for fact, _agent, _day in claimed.reads) == ["f-alice", "f-bob-as-free"]
    assert all(day == date.fromisoformat(DAY) for _fact, _agent, day in claimed.reads)
    untied = claim_reads(site / "state", {"alice": None, "free": None})  # the same files again
    assert {fact for fact, _agent, _day in untied.reads} == {
        "f-alice",
        "f-bob-as-alice",
        "f-bob-as-free",
    }
