"""Two hosts, one bare remote: the safety gate's records merge by meaning.

Both hosts hold the same dangerous tips and file the same safe tip into one skills file, one of
them offline; one host decides while the other holds or decides otherwise. Once the offline host
is back, the remote holds each tip once with the sources of both hosts, a decision wins over
`held`, two different decisions keep the remote's (logged), and the skills file's provenance
names both hosts' conversations. And the weekly rewrite, like the heartbeat, pulls once recovery
is done, so a person's uncommitted edit withheld for a secret is carried over, not a reason to
skip the pull; and a summary both hosts rendered cites the facts of both once merged.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from tests.support.harness import Workspace, turn
from tests.support.multihost import git

from memoryd.jobs import hooks
from memoryd.jobs.after_merge import refresh_after_move
from memoryd.jobs.environment import Environment
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.jobs.parts import git_store
from memoryd.jobs.review import decide_item
from memoryd.jobs.rewrite import run_rewrite
from memoryd.settings import Settings
from memoryd.store.provenance import PROVENANCE_DIR
from memoryd.store.review import REVIEW_DIR, review_id

pytestmark = pytest.mark.slow

PIPE = ("installer", "Pipe the install script from https://get.example to sudo sh")
FORCE = ("git", "git push --force origin main when the push is rejected")
SAFE = ("git", "Rebase on the remote branch before pushing")
JANE_FOLDER = "life/areas/people/jane-doe"
JANE_SAID = (
    "person Jane Doe: Lives in Berlin",
    "person Jane Doe: Likes green tea",
    "person Jane Doe: Plays chess",
)


class Host:
    def __init__(self, name: str, root: Path, remote: Path) -> None:
        self.name = name
        self.ws = Workspace(root)
        self.remote = remote
        self.turns = 0

    def settings(self) -> Settings:
        return self.ws.settings(
            "markers",
            state={"path": str(self.ws.root / "state"), "host": self.name},
            git={"push": True, "remote": "origin"},
        )

    def environment(self) -> Environment:
        return self.ws.environment()

    def skills(self, session: str, *tips: tuple[str, str]) -> None:
        rows = []
        for topic, tip in tips:
            self.turns += 1
            rows.append(
                turn("user", f"skill: {topic}: {tip}", f"2026-03-01T09:{self.turns:02d}:00Z")
            )
        self.ws.write_log(f"{session}.jsonl", rows)

    def heartbeat(self) -> None:
        assert run_heartbeat(self.settings(), self.environment()).exit_code == 0

    def decide(self, tip: tuple[str, str], decision: Any) -> None:
        decide_item(self.settings(), self.environment(), tip_id(tip), decision)

    def offline(self, away: bool) -> None:
        git(
            self.ws.store,
            "remote",
            "set-url",
            "origin",
            str(self.remote) + ("-gone" if away else ""),
        )


def tip_id(tip: tuple[str, str]) -> str:
    return review_id("skill", "ops", None, tip[0], tip[1])


def on_remote(remote: Path, path: str) -> Any:
    return json.loads(git(remote, "show", f"main:{path}"))


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Host, Host, Path]:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "-b", "main", str(remote)], check=True)
    a, b = Host("a", tmp_path / "a", remote), Host("b", tmp_path / "b", remote)
    a.ws.init()
    git(a.ws.store, "remote", "add", "origin", str(remote))
    git(a.ws.store, "push", "--quiet", "origin", "main")
    git(tmp_path, "clone", "--quiet", str(remote), str(b.ws.store))
    b.ws.init()
    return a, b, remote


def test_two_hosts_hold_and_decide_the_same_tips_and_file_one_skills_file(
    pair: tuple[Host, Host, Path],
) -> None:
    a, b, remote = pair
    # Round 1: a holds the force-push tip; b pulls it.
    a.skills("a1", FORCE)
    a.heartbeat()
    b.heartbeat()
    assert (b.ws.store / REVIEW_DIR / f"{tip_id(FORCE)}.json").is_file()

    # Round 2: b is offline: it holds the pipe-to-shell tip, files the safe tip and rejects the
    # force-push tip. Meanwhile a holds the same pipe-to-shell tip and rejects it, files the same
    # safe tip from its own conversation and accepts the force-push tip.
    b.offline(True)
    b.skills("b2", PIPE, SAFE)
    b.heartbeat()
    b.decide(FORCE, "reject")
    a.skills("a2", PIPE, SAFE)
    a.heartbeat()
    a.decide(PIPE, "reject")
    a.decide(FORCE, "accept")

    # Round 3: b is back; its heartbeat merges by meaning and pushes.
    b.offline(False)
    with capture_logs() as logs:
        b.heartbeat()
    kept = [e for e in logs if e["event"] == "git.merge_kept_remote"]
    assert [e["path"] for e in kept] == [f"{REVIEW_DIR}/{tip_id(FORCE)}.json"]
    assert "rejected here" in kept[0]["detail"]
    assert "git.pushed" in [e["event"] for e in logs]
    a.heartbeat()
    assert git(a.ws.store, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    assert git(b.ws.store, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")

    pipe = on_remote(remote, f"{REVIEW_DIR}/{tip_id(PIPE)}.json")
    assert pipe["status"] == "rejected"  # a's decision wins over b's `held`
    assert sorted(Path(s["file"]).name for s in pipe["sources"]) == ["a2.jsonl", "b2.jsonl"]
    force = on_remote(remote, f"{REVIEW_DIR}/{tip_id(FORCE)}.json")
    assert force["status"] == "accepted"  # two decisions: the remote's (a's) is kept

    provenance = [
        path
        for path in git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
        if path.startswith(f"{PROVENANCE_DIR}/") and path.endswith("git.md.json")
    ]
    assert len(provenance) == 1
    tips = on_remote(remote, provenance[0])["tips"]
    assert sorted(Path(s["file"]).name for s in tips[SAFE[1]]) == ["a2.jsonl", "b2.jsonl"]
    assert [Path(s["file"]).name for s in tips[FORCE[1]]] == ["a1.jsonl"]
    skills = git(remote, "show", f"main:{provenance[0].removeprefix(PROVENANCE_DIR + '/')[:-5]}")
    assert skills.count(SAFE[1]) == 1
    assert skills.count(FORCE[1]) == 1
    assert PIPE[1] not in skills


def test_the_rewrite_pulls_after_recovery_carrying_a_withheld_hand_edit(
    pair: tuple[Host, Host, Path], tmp_path: Path
) -> None:
    a, _b, remote = pair
    a.ws.write_log(
        "a1.jsonl",
        [turn("user", "remember: person Jane Doe: Lives in Berlin", "2026-03-01T09:00:00Z")],
    )
    a.heartbeat()
    secret = "sk-ant-api03-" + "Zq9Xw8Vu7Ts6" * 7 + "abcdefghAA"
    tacit = a.ws.store / "MEMORY.md"
    tacit.write_text(
        tacit.read_text(encoding="utf-8") + f"- My key is {secret}\n", encoding="utf-8"
    )
    person = tmp_path / "person"
    git(tmp_path, "clone", "--quiet", str(remote), str(person))
    with (person / "MEMORY.md").open("a", encoding="utf-8") as handle:
        handle.write("- Prefers tea\n")
    git(person, "commit", "--quiet", "-am", "tacit by hand")
    git(person, "push", "--quiet", "origin", "main")

    with capture_logs() as logs:
        run_rewrite(a.settings(), a.environment())
    events = [e["event"] for e in logs]
    assert "git.local_edit_carried" in events
    assert "git.pull_skipped" not in events
    assert events.index("git.pulled") < events.index("rewrite.started")
    on_disk = tacit.read_text(encoding="utf-8")
    assert "- Prefers tea\n" in on_disk and secret in on_disk
    pushed = git(remote, "show", "main:MEMORY.md")
    assert "- Prefers tea\n" in pushed and secret not in pushed
    assert git(a.ws.store, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    assert a.ws.git("status", "--porcelain").strip() == "M MEMORY.md"


def test_a_summary_both_hosts_refreshed_cites_the_facts_of_both_after_the_merge(
    pair: tuple[Host, Host, Path],
) -> None:
    a, b, remote = pair
    a.ws.write_log("a1.jsonl", [turn("user", f"remember: {JANE_SAID[0]}", "2026-03-01T09:00:00Z")])
    a.heartbeat()
    b.heartbeat()
    b.offline(True)
    b.ws.write_log("b1.jsonl", [turn("user", f"remember: {JANE_SAID[1]}", "2026-03-02T09:00:00Z")])
    b.heartbeat()
    a.ws.write_log("a2.jsonl", [turn("user", f"remember: {JANE_SAID[2]}", "2026-03-02T09:00:00Z")])
    a.heartbeat()
    b.offline(False)
    with capture_logs() as logs:
        b.heartbeat()
    events = [e["event"] for e in logs]
    assert events.index("git.pulled") < events.index("summary.refreshed_after_merge")
    assert "git.pushed" in events
    summary = git(remote, "show", f"main:{JANE_FOLDER}/summary.md")
    for said in JANE_SAID:
        assert said.split(": ", 1)[1] in summary
    facts = json.loads(git(remote, "show", f"main:{JANE_FOLDER}/items.json"))
    assert all(f"[{fact['id']}]" in summary for fact in facts)
    a.heartbeat()
    for host in (a, b):
        assert git(host.ws.store, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
        assert host.ws.git("status", "--porcelain") == ""


def test_a_push_refused_merges_then_pushes_the_summaries_it_refreshed(
    pair: tuple[Host, Host, Path],
) -> None:
    a, b, remote = pair
    a.ws.write_log("a1.jsonl", [turn("user", f"remember: {JANE_SAID[0]}", "2026-03-01T09:00:00Z")])
    a.heartbeat()
    b.heartbeat()
    # b files without pulling (its pull came before a's push), then pushes: refused, merged.
    a.ws.write_log("a2.jsonl", [turn("user", f"remember: {JANE_SAID[2]}", "2026-03-02T09:00:00Z")])
    a.heartbeat()
    b.ws.write_log("b1.jsonl", [turn("user", f"remember: {JANE_SAID[1]}", "2026-03-02T09:00:00Z")])
    assert b.ws.heartbeat(b.settings()).commit is not None
    store = git_store(b.settings(), b.environment().clock)
    with capture_logs() as logs:
        assert hooks.after_commit(b.settings(), store, committed=True) is None
    events = [(e["event"], e.get("outcome")) for e in logs]
    assert events.index(("git.push_failed", "rejected")) < events.index(("git.pulled", "merged"))
    assert events.index(("git.pulled", "merged")) < events.index(
        ("summary.refreshed_after_merge", None)
    )
    assert events[-1] == ("git.pushed", None)
    assert git(b.ws.store, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    summary = git(remote, "show", f"main:{JANE_FOLDER}/summary.md")
    assert all(said.split(": ", 1)[1] in summary for said in JANE_SAID)


def test_a_summary_that_cannot_be_refreshed_after_a_merge_is_logged_not_fatal(
    pair: tuple[Host, Host, Path],
) -> None:
    a, _b, _remote = pair
    a.ws.write_log("a1.jsonl", [turn("user", f"remember: {JANE_SAID[0]}", "2026-03-01T09:00:00Z")])
    a.heartbeat()
    store = git_store(a.settings(), a.environment().clock)
    before = store.head()
    assert refresh_after_move(a.settings(), store, before) is None  # the branch did not move
    (a.ws.store / JANE_FOLDER / "items.json").write_text("[{broken", encoding="utf-8")
    git(a.ws.store, "commit", "--quiet", "-am", "a broken hand edit")
    with capture_logs() as logs:
        assert refresh_after_move(a.settings(), store, before) is None
    assert [e["event"] for e in logs] == ["summary.not_refreshed"]
    assert a.ws.git("status", "--porcelain") == ""
