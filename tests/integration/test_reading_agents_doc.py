"""docs/agents.md works as written: every `memoryd connect` line it documents is run against a
real store (the configuration path swapped for the test's, HOME the store's folder), and what it
writes into each runtime's files works — the hook prints the Markdown bundle, the MCP server
initializes and lists its tools, the Paperclip skill's commands give a bundle and JSON hits."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.support.agent_clis import context_takes_format
from tests.support.cli import write_config
from tests.support.reading import child_environment, memoryd, write_transcript

from memoryd.errors import EXIT_OK

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
DOC_CONFIG = "/etc/memoryd/memoryd.toml"
TOOLS = ["context", "get_entity", "remember", "search"]


def blocks(language: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return re.findall(rf"^ *```{language}\n(.*?)^ *```", text, re.DOTALL | re.MULTILINE)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("agents-doc")
    write_config(folder)
    write_transcript(folder)
    assert memoryd(folder, "init").returncode == EXIT_OK
    assert memoryd(folder, "heartbeat").returncode == EXIT_OK
    return folder


def run_memoryd(store: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A memoryd command line as a runtime would run it (the program by any path), run with this
    interpreter; `--format` dropped where this memoryd's `context` has none yet."""
    assert Path(argv[0]).name == "memoryd", argv
    arguments = argv[1:]
    if "--format" in arguments and not context_takes_format():
        at = arguments.index("--format")
        del arguments[at : at + 2]
    result = subprocess.run(
        [sys.executable, "-m", "memoryd", *arguments],
        cwd=store,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(store),
            "PYTHONPATH": os.pathsep.join(sys.path),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == EXIT_OK, result.stderr
    return result


def documented_connect(store: Path, runtime: str) -> None:
    """Run the page's `memoryd … connect RUNTIME …` line with the test's configuration."""
    lines = [
        line.strip()
        for block in blocks("sh")
        for line in block.splitlines()
        if line.strip().startswith("memoryd ") and f" connect {runtime} " in f"{line} "
    ]
    assert len(lines) == 1, lines
    argv = shlex.split(lines[0].replace(DOC_CONFIG, str(store / "memoryd.toml")))
    run_memoryd(store, argv)


def assert_bundle(text: str, agent: str) -> None:
    assert text.startswith(f"# Memory for {agent}, ")
    assert "## How the user works (MEMORY.md)" in text
    assert "## Jane Doe (people/jane-doe)" in text


def mcp_tools(store: Path, command: str, args: list[str]) -> list[str]:
    assert Path(command).name == "memoryd"
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", *args],
        env=child_environment(store),
        cwd=str(store),
    )

    async def session() -> list[str]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    return anyio.run(session)


def session_hook(settings: dict[str, Any]) -> list[str]:
    groups = settings["hooks"]["SessionStart"]
    assert len(groups) == 1 and groups[0]["hooks"][0]["type"] == "command"
    return shlex.split(groups[0]["hooks"][0]["command"])


def test_claude_code_connected_as_documented_gets_the_bundle_and_the_tools(store: Path) -> None:
    documented_connect(store, "claude-code")
    hook = session_hook(json.loads((store / ".claude" / "settings.json").read_text("utf-8")))
    assert_bundle(run_memoryd(store, hook).stdout, "claude-code")
    server = json.loads((store / ".claude.json").read_text("utf-8"))["mcpServers"]["memoryd"]
    assert mcp_tools(store, server["command"], server["args"]) == TOOLS


def test_codex_connected_as_documented_gets_the_bundle_and_the_tools(store: Path) -> None:
    documented_connect(store, "codex")
    hook = session_hook(json.loads((store / ".codex" / "hooks.json").read_text("utf-8")))
    answer = json.loads(run_memoryd(store, hook).stdout)  # Codex's SessionStart hook JSON
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert_bundle(answer["hookSpecificOutput"]["additionalContext"], "codex")
    config = tomllib.loads((store / ".codex" / "config.toml").read_text("utf-8"))
    server = config["mcp_servers"]["memoryd"]
    assert mcp_tools(store, server["command"], server["args"]) == TOOLS


def test_openclaw_connected_as_documented_has_the_server_and_the_block(store: Path) -> None:
    documented_connect(store, "openclaw")
    config = json.loads((store / ".openclaw" / "openclaw.json").read_text("utf-8"))
    server = config["mcp"]["servers"]["memoryd"]
    assert mcp_tools(store, server["command"], server["args"]) == TOOLS
    block = (store / ".openclaw" / "workspace" / "AGENTS.md").read_text("utf-8")
    assert "<!-- memoryd:begin" in block and "`context` tool" in block


def test_the_paperclip_skill_commands_give_a_bundle_and_json_hits(store: Path) -> None:
    documented_connect(store, "paperclip")
    skill = (store / ".paperclip" / "skills" / "memoryd" / "SKILL.md").read_text("utf-8")
    assert skill.startswith("---\nname: memoryd\ndescription: ")
    commands = [shlex.split(c) for c in re.findall(r"`([^`]*memoryd [^`]+)`", skill)]
    context = next(c for c in commands if "context" in c)
    assert_bundle(run_memoryd(store, context).stdout, "paperclip")
    search = next(c for c in commands if "search" in c)
    search[search.index("WORDS")] = "Acme"
    hits = json.loads(run_memoryd(store, search).stdout)
    assert hits and set(hits[0]) == {
        "kind", "id", "ref", "path", "line", "text", "status", "tier", "score", "entity", "date"
    }  # fmt: skip
