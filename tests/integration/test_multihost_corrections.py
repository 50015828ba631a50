"""Corrections and review decisions made on one host reach the others (`git.push = true`).

Two hosts share one bare remote and run the real CLI as subprocesses. `supersede` and `forget`
pull before writing (so a fact filed or corrected on the other host can be corrected here),
give the new fact an id in this host's range, and push after their commit; `review reject` on
one host is pushed, so the other host's `review accept` of the same item, pulled first, is
refused as already decided.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.multihost import git

from memoryd.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from memoryd.store.items import host_id_code
from memoryd.store.review import review_id

pytestmark = pytest.mark.slow

JANE = "life/areas/people/jane-doe/items.json"
TIP = ("git", "git push --force origin main when the push is rejected")


class Host:
    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.turns = 0
        (root / "logs").mkdir(parents=True)
        (root / "memoryd.toml").write_text(
            '[store]\npath = "store"\n'
            f'[state]\npath = "state"\nhost = "{name}"\n'
            '[llm]\nprovider = "markers"\n[backfill]\nsince = "all"\n'
            '[git]\npush = true\nremote = "origin"\n'
            '[[agents]]\nname = "ops"\n  [[agents.sources]]\n  format = "jsonl"\n  path = "logs"\n',
            encoding="utf-8",
        )

    @property
    def store(self) -> Path:
        return self.root / "store"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        environ = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root),
            "PYTHONPATH": os.pathsep.join(sys.path),
        }
        return subprocess.run(
            [sys.executable, "-m", "memoryd", "--config", str(self.root / "memoryd.toml"), *args],
            cwd=self.root,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def ok(self, *args: str) -> str:
        result = self.run(*args)
        assert result.returncode == EXIT_OK, result.stdout + result.stderr
        return result.stdout

    def say(self, *lines: str) -> None:
        with (self.root / "logs" / f"{self.name}.jsonl").open("a", encoding="utf-8") as handle:
            for line in lines:
                self.turns += 1
                row = {
                    "role": "user",
                    "content": line,
                    "timestamp": f"2026-03-01T09:{self.turns:02d}:00Z",
                }
                handle.write(json.dumps(row) + "\n")

    def fact_id(self, number: int) -> str:
        return f"jane-doe-{host_id_code(self.name)}{number:03d}"


def remote_facts(remote: Path) -> dict[str, dict[str, Any]]:
    facts: list[dict[str, Any]] = json.loads(git(remote, "show", f"main:{JANE}"))
    return {fact["id"]: fact for fact in facts}


def test_corrections_and_decisions_reach_the_other_host(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    a, b = Host("host-a", tmp_path / "a"), Host("host-b", tmp_path / "b")
    a.ok("init")
    git(a.store, "remote", "add", "origin", str(remote))
    git(a.store, "push", "--quiet", "origin", "main")
    git(tmp_path, "clone", "--quiet", str(remote), str(b.store))
    b.ok("init")

    a.say("remember: person Jane Doe: Lives in Berlin", f"skill: {TIP[0]}: {TIP[1]}")
    a.ok("heartbeat")
    berlin = a.fact_id(1)
    assert remote_facts(remote)[berlin]["fact"] == "Lives in Berlin"

    # b has not run since: the command pulls a's fact before correcting it, and pushes.
    assert "superseded by" in b.ok("supersede", berlin, "Lives in Munich")
    munich = b.fact_id(1)
    facts = remote_facts(remote)
    assert facts[berlin]["status"] == "superseded"
    assert facts[berlin]["supersededBy"] == munich
    assert facts[munich]["fact"] == "Lives in Munich"

    # a corrects b's fact (pulled first); its new fact is in a's own range.
    a.ok("supersede", munich, "Lives in Hamburg")
    hamburg = a.fact_id(2)
    assert remote_facts(remote)[hamburg]["fact"] == "Lives in Hamburg"
    b.ok("forget", hamburg, "--reason", "never lived there")
    facts = remote_facts(remote)
    assert facts[hamburg]["status"] == "retracted"
    assert facts[hamburg]["retraction"]["reason"] == "never lived there"
    assert facts[munich]["supersededBy"] == hamburg
    assert len(facts) == 3  # every id given once, by the host that gave it

    # b rejects the tip a held; a pulls before deciding and is told it was decided.
    item = review_id("skill", "ops", None, TIP[0], TIP[1])
    assert "rejected" in b.ok("review", "reject", item)
    accept = a.run("review", "accept", item)
    assert accept.returncode == EXIT_USAGE, accept.stdout + accept.stderr
    assert "already rejected" in accept.stdout + accept.stderr
    decided = json.loads(git(remote, "show", f"main:.memoryd/review/{item}.json"))
    assert decided["status"] == "rejected"
    skills = [
        git(remote, "show", f"main:{path}")
        for path in git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
        if path.startswith("agents/")
    ]
    assert skills
    assert not any(TIP[1] in text for text in skills)

    # Both hosts end in sync with the remote, with clean trees.
    for host in (a, b):
        host.ok("heartbeat")
    for host in (a, b):
        assert git(host.store, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
        assert git(host.store, "status", "--porcelain") == ""
        assert json.loads((host.store / JANE).read_text(encoding="utf-8")) == list(
            remote_facts(remote).values()
        )


def test_a_correction_whose_push_keeps_failing_exits_1_and_status_says_so(tmp_path: Path) -> None:
    host = Host("host-a", tmp_path / "a")
    config = host.root / "memoryd.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            'remote = "origin"', 'remote = "origin"\npush_failure_limit = 1'
        ),
        encoding="utf-8",
    )
    host.ok("init")
    git(host.store, "remote", "add", "origin", str(tmp_path / "nowhere.git"))
    host.say("remember: person Jane Doe: Lives in Berlin", f"skill: {TIP[0]}: {TIP[1]}")
    assert host.run("heartbeat").returncode == EXIT_FAILED
    forget = host.run("forget", host.fact_id(1), "--reason", "wrong")
    assert forget.returncode == EXIT_FAILED, forget.stdout + forget.stderr
    assert "retracted (commit" in forget.stdout
    assert "push to origin failed 2 jobs in a row" in forget.stdout
    item = review_id("skill", "ops", None, TIP[0], TIP[1])
    reject = host.run("review", "reject", item)
    assert reject.returncode == EXIT_FAILED, reject.stdout + reject.stderr
    assert f"{item} rejected" in reject.stdout
    assert "push to origin failed 3 jobs in a row" in reject.stdout
    facts = json.loads((host.store / JANE).read_text(encoding="utf-8"))
    assert facts[0]["status"] == "retracted"
    assert git(host.store, "status", "--porcelain") == ""
    assert "SYNC FAILING: the push failed 3 jobs in a row" in host.run("status").stdout
