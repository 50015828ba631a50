"""Hosts sharing one store through a bare remote, each with its own workspace, and a fake model
for them."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from memoryd.jobs.environment import Environment
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.settings import Settings
from memoryd.store.items import host_id_code, parse_items
from tests.fakes.fake_anthropic import RecordedRequest, ToolUse
from tests.support.harness import TEST_KEY, Workspace, turn

JANE = "life/areas/people/jane-doe"
_REMEMBER = re.compile(r"^remember: (\w+) ([^:]+): (.+)$", re.MULTILINE)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=P", "-c", "user.email=p@example.org", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def model(request: RecordedRequest) -> ToolUse:
    """Files `remember:` lines as significant facts; `replaces <id>` names a superseded fact."""
    content = request.body["messages"][0]["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    facts: list[dict[str, Any]] = []
    entities: list[dict[str, Any]] = []
    for kind, name, said in _REMEMBER.findall(text):
        supersedes = re.findall(r"replaces ([a-z0-9-]+-\d{3,})", said)
        statement = re.sub(r"\s*replaces [a-z0-9-]+-\d{3,}", "", said)
        facts.append(
            {
                "entity": {"name": name, "kind": kind},
                "fact": statement,
                "category": "status",
                "supersedes": supersedes,
            }
        )
        entities.append({"name": name, "kind": kind, "significant": True})
    return ToolUse({"facts": facts, "entities": entities})


class Host:
    def __init__(self, name: str, root: Path, remote: Path, base_url: str) -> None:
        self.name = name
        self.ws = Workspace(root)
        self.remote = remote
        self.base_url = base_url
        self.lines = 0

    def settings(self) -> Settings:
        return self.ws.settings(
            "anthropic",
            llm={"provider": "anthropic", "base_url": self.base_url, "max_attempts": 1},
            state={"path": str(self.ws.root / "state"), "host": self.name},
            git={"push": True, "remote": "origin"},
        )

    def environment(self) -> Environment:
        return replace(self.ws.environment(), environ={"ANTHROPIC_API_KEY": TEST_KEY})

    def remember(self, day: str, *lines: str) -> None:
        rows = []
        for line in lines:
            self.lines += 1
            rows.append(
                turn("user", f"remember: {line}", f"{day}T{9 + self.lines % 10:02d}:00:00Z")
            )
        self.ws.write_log(f"{self.name}.jsonl", rows, append=True)

    def heartbeat(self) -> int:
        return run_heartbeat(self.settings(), self.environment()).exit_code

    def offline(self, away: bool) -> None:
        url = str(self.remote) + ("-unreachable" if away else "")
        git(self.ws.store, "remote", "set-url", "origin", url)

    def fact_id(self, number: int) -> str:
        return f"jane-doe-{host_id_code(self.name)}{number:03d}"


def remote_facts(remote: Path, folder: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(git(remote, "show", f"main:{folder}/items.json"))
    parse_items(Path(folder) / "items.json", json.dumps(data))  # valid: shape, no duplicate id
    return data
