"""Several hosts, one memory: three stores sharing one bare remote through `git.push`.

Every heartbeat is the real job (`run_heartbeat`: recover and pull, extract through the real SDK
against the fake API, commit, push), each host with its own store clone, state database and
transcripts. The hosts file facts about the same person and project, overlap (both pull the same
remote, then both push), one is offline for a round, a person pushes a hand edit meanwhile, and a
fact filed on one host is superseded on another. Afterwards the remote must hold every fact of
every host exactly once, ids unique store-wide, one folder per entity, and every host must be
clean, in sync and not stuck.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.multihost import JANE, Host, git, model, remote_facts

from memoryd.jobs import hooks
from memoryd.store.items import host_id_code

APOLLO = "life/projects/apollo"


@pytest.fixture
def fleet(tmp_path: Path) -> Any:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    with FakeAnthropicServer(handler=model) as server:
        hosts = [Host(n, tmp_path / n, remote, server.base_url) for n in ("a", "b", "c")]
        first = hosts[0].ws
        first.init()
        git(first.store, "remote", "add", "origin", str(remote))
        git(first.store, "push", "--quiet", "origin", "main")
        for host in hosts[1:]:
            git(tmp_path, "clone", "--quiet", str(remote), str(host.ws.store))
            host.ws.init()
        yield hosts, remote, server


def test_three_hosts_share_one_memory_without_splitting(fleet: Any, tmp_path: Path) -> None:
    hosts, remote, _server = fleet
    a, b, c = hosts

    # Round 1: a files about Jane and the project.
    a.remember("2026-03-01", "person Jane Doe: Joined Acme as CTO", "project Apollo: Kickoff held")
    assert a.heartbeat() == 0

    # Round 2, overlapping: b pulls, then c runs a whole heartbeat and pushes, then b files and
    # pushes on top of what it pulled. Both create the same new entity, Bob Smith.
    b.remember("2026-03-02", "person Jane Doe: Likes green tea", "person Bob Smith: Runs the lab")
    c.remember("2026-03-02", "person Jane Doe: Lives in Berlin", "person Bob Smith: Plays chess")
    c.remember("2026-03-02", "project Apollo: Budget approved")
    hooks.before_writing(b.settings(), _git_of(b))
    assert c.heartbeat() == 0
    assert b.ws.heartbeat(b.settings(), b.base_url).commit is not None  # on the older remote
    with capture_logs() as logs:
        assert hooks.after_commit(b.settings(), _git_of(b), committed=True) is None
    events = [(e["event"], e.get("outcome")) for e in logs]
    assert events.index(("git.push_failed", "rejected")) < events.index(("git.pulled", "merged"))
    assert ("git.pushed", None) in events

    # Round 3: c is offline; a person pushes a hand edit (a correction of a's fact, a tacit
    # line); b supersedes a's fact; a files more about the project.
    c.offline(True)
    c.remember("2026-03-03", "person Jane Doe: Has two kids")
    assert c.heartbeat() == 0
    person = tmp_path / "person"
    git(tmp_path, "clone", "--quiet", str(remote), str(person))
    items = json.loads((person / JANE / "items.json").read_text(encoding="utf-8"))
    for fact in items:
        if fact["id"] == a.fact_id(1):
            fact["fact"] = "Joined Acme as CTO in March 2025"
    (person / JANE / "items.json").write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    with (person / "MEMORY.md").open("a", encoding="utf-8") as handle:
        handle.write("- Written by hand: prefers mornings\n")
    git(person, "commit", "--quiet", "-am", "hand edit")
    git(person, "push", "--quiet", "origin", "main")
    b.remember("2026-03-03", f"person Jane Doe: Works at Initech replaces {a.fact_id(1)}")
    assert b.heartbeat() == 0
    a.remember("2026-03-03", "project Apollo: Launch moved to April")
    assert a.heartbeat() == 0

    # Round 4: c is back, with its unpushed heartbeat, and files again.
    c.offline(False)
    c.remember("2026-03-04", "person Jane Doe: Speaks French")
    with capture_logs() as logs:
        assert c.heartbeat() == 0
    assert "git.pushed" in [e["event"] for e in logs]

    # Round 5: everyone runs once more and is in sync.
    for host in hosts:
        assert host.heartbeat() == 0
    for host in hosts:
        assert host.heartbeat() == 0

    jane = remote_facts(remote, JANE)
    statements = [f["fact"] for f in jane]
    assert sorted(statements) == sorted(
        [
            "Joined Acme as CTO in March 2025",  # the person's correction of a's fact
            "Likes green tea",
            "Lives in Berlin",
            "Has two kids",
            "Works at Initech",
            "Speaks French",
        ]
    )
    by_text = {f["fact"]: f for f in jane}
    corrected = by_text["Joined Acme as CTO in March 2025"]
    assert corrected["id"] == a.fact_id(1)
    assert corrected["status"] == "superseded"
    assert corrected["supersededBy"] == by_text["Works at Initech"]["id"]
    assert by_text["Works at Initech"]["id"].startswith(f"jane-doe-{host_id_code('b')}")
    apollo = sorted(f["fact"] for f in remote_facts(remote, APOLLO))
    assert apollo == ["Budget approved", "Kickoff held", "Launch moved to April"]
    bob = sorted(f["fact"] for f in remote_facts(remote, "life/areas/people/bob-smith"))
    assert bob == ["Plays chess", "Runs the lab"]
    # Ids unique store-wide, one folder per entity.
    tree = git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
    folders = sorted({p.rsplit("/", 1)[0] for p in tree if p.endswith("/items.json")})
    assert folders == [
        "life/areas/people/bob-smith",
        "life/areas/people/jane-doe",
        "life/projects/apollo",
    ]
    ids = [f["id"] for folder in folders for f in remote_facts(remote, folder)]
    assert len(ids) == len(set(ids))
    assert "Written by hand: prefers mornings" in git(remote, "show", "main:MEMORY.md")
    index = git(remote, "show", "main:life/index.md")
    assert all(ref in index for ref in ("people/jane-doe", "people/bob-smith", "projects/apollo"))
    # Every host clean, in sync with the remote, not stuck.
    head = git(remote, "rev-parse", "main").strip()
    for host in hosts:
        assert host.ws.git("status", "--porcelain") == ""
        assert host.ws.git("rev-parse", "HEAD").strip() == head


def _git_of(host: Host) -> Any:
    from memoryd.jobs.parts import git_store

    return git_store(host.settings(), host.ws.environment().clock)


def test_init_and_heartbeats_work_under_a_hostile_global_git_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`core.autocrlf=true` with `core.safecrlf=true`, an fsmonitor command and a hook in the
    person's global configuration: init and heartbeats work, and memoryd's git runs neither."""
    witness = tmp_path / "ran"
    script = tmp_path / "hostile.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {witness}\nexit 1\n', encoding="utf-8")
    script.chmod(0o755)
    hooks_dir = tmp_path / "hooks"
    hooks_dir.mkdir()
    for hook in ("pre-commit", "post-commit", "reference-transaction"):
        (hooks_dir / hook).symlink_to(script)
    config = tmp_path / "gitconfig"
    config.write_text(
        "[core]\n\tautocrlf = true\n\tsafecrlf = true\n"
        f"\tfsmonitor = {script}\n\thooksPath = {hooks_dir}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    # The remote's side of a push is the server's business (git gives it its own configuration,
    # not memoryd's): this one runs no hooks.
    git(remote, "config", "core.hooksPath", "/dev/null")
    with FakeAnthropicServer(handler=model) as server:
        host = Host("a", tmp_path / "a", remote, server.base_url)
        host.ws.init()
        git(host.ws.store, "remote", "add", "origin", str(remote))
        host.remember("2026-03-01", "person Jane Doe: Joined Acme as CTO")
        assert host.heartbeat() == 0
        host.remember("2026-03-02", "person Jane Doe: Lives in Berlin")
        assert host.heartbeat() == 0
    assert not witness.exists()
    facts = remote_facts(remote, JANE)
    assert sorted(f["fact"] for f in facts) == ["Joined Acme as CTO", "Lives in Berlin"]
    blob = subprocess.run(
        ["git", "-C", str(remote), "show", f"main:{JANE}/items.json"],
        capture_output=True,
        check=True,
    ).stdout
    assert b"\r\n" not in blob


def test_a_hand_edit_withheld_for_a_secret_does_not_block_the_pull(
    fleet: Any, tmp_path: Path
) -> None:
    hosts, remote, _server = fleet
    a = hosts[0]
    secret = "sk-ant-api03-" + "Zq9Xw8Vu7Ts6" * 7 + "abcdefghAA"
    a.remember("2026-03-01", "person Jane Doe: Joined Acme as CTO")
    assert a.heartbeat() == 0
    tacit = a.ws.store / "MEMORY.md"
    tacit.write_text(
        tacit.read_text(encoding="utf-8") + f"- My key is {secret}\n", encoding="utf-8"
    )
    assert a.heartbeat() == 0  # the edit is withheld: it holds a secret
    assert a.ws.git("status", "--porcelain").strip() == "M MEMORY.md"
    person = tmp_path / "person"
    git(tmp_path, "clone", "--quiet", str(remote), str(person))
    with (person / "MEMORY.md").open("a", encoding="utf-8") as handle:
        handle.write("- Prefers tea\n")
    git(person, "commit", "--quiet", "-am", "tacit by hand")
    git(person, "push", "--quiet", "origin", "main")

    a.remember("2026-03-02", "person Jane Doe: Lives in Berlin")
    with capture_logs() as logs:
        assert a.heartbeat() == 0
    events = [e["event"] for e in logs]
    assert "git.local_edit_carried" in events and "git.pull_skipped" not in events
    on_disk = tacit.read_text(encoding="utf-8")
    assert "- Prefers tea\n" in on_disk and secret in on_disk
    pushed = git(remote, "show", "main:MEMORY.md")
    assert "- Prefers tea\n" in pushed and secret not in pushed
    assert sorted(f["fact"] for f in remote_facts(remote, JANE)) == [
        "Joined Acme as CTO",
        "Lives in Berlin",
    ]
    assert a.ws.git("status", "--porcelain").strip() == "M MEMORY.md"
