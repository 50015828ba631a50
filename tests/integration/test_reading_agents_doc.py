"""docs/agents.md works as written: every hook and server command it documents is run against a
real store (the configuration path swapped for the test's) and its output has the shape the
agent expects — a Markdown bundle, JSON hits, or an MCP server that initializes and lists its
tools."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
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


def run_documented(store: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A documented `memoryd …` shell command, run with this interpreter and the test's
    configuration; a `> file` redirection is honoured."""
    argv = shlex.split(command.replace(DOC_CONFIG, str(store / "memoryd.toml")))
    assert argv[0] == "memoryd", command
    target = None
    if ">" in argv:
        target = Path(argv[argv.index(">") + 1].replace("~", str(store), 1))  # HOME is `store`
        argv = argv[: argv.index(">")]
    result = subprocess.run(
        [sys.executable, "-m", "memoryd", *argv[1:]],
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
    assert result.stderr == ""  # --log-level warning: the output is the answer alone
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(result.stdout, encoding="utf-8")
    return result


def assert_bundle(text: str, agent: str) -> None:
    assert text.startswith(f"# Memory for {agent}, ")
    assert "## How the user works (MEMORY.md)" in text
    assert "## Jane Doe (people/jane-doe)" in text


def mcp_tools(store: Path, command: str, args: list[str]) -> list[str]:
    assert command == "memoryd"
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", *[a.replace(DOC_CONFIG, str(store / "memoryd.toml")) for a in args]],
        env=child_environment(store),
        cwd=str(store),
    )

    async def session() -> list[str]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    return anyio.run(session)


def test_the_claude_code_session_start_hook_prints_the_bundle(store: Path) -> None:
    settings = [json.loads(block) for block in blocks("json") if "SessionStart" in block]
    assert len(settings) == 1
    hook = settings[0]["hooks"]["SessionStart"][0]
    assert hook["hooks"][0]["type"] == "command"
    result = run_documented(store, hook["hooks"][0]["command"])
    assert_bundle(result.stdout, "claude-code")


def test_the_claude_code_mcp_config_starts_a_working_server(store: Path) -> None:
    configs = [json.loads(block) for block in blocks("json") if "mcpServers" in block]
    server = configs[0]["mcpServers"]["memoryd"]
    assert mcp_tools(store, server["command"], server["args"]) == TOOLS


def test_the_codex_mcp_config_starts_a_working_server(store: Path) -> None:
    config = tomllib.loads(next(block for block in blocks("toml") if "mcp_servers" in block))
    server = config["mcp_servers"]["memoryd"]
    assert mcp_tools(store, server["command"], server["args"]) == TOOLS


def test_the_agents_md_line_runs_the_context_command(store: Path) -> None:
    line = blocks("markdown")[0]
    commands = re.findall(r"`(memoryd [^`]+)`", line)
    result = run_documented(store, commands[0])
    assert_bundle(result.stdout, "codex")


def test_the_openclaw_and_paperclip_commands_give_a_bundle_and_json_hits(store: Path) -> None:
    commands = [
        line.strip()
        for block in blocks("sh")
        for line in block.splitlines()
        if line.strip().startswith("memoryd ")
    ]
    context = next(c for c in commands if " context " in c and "openclaw" in c)
    run_documented(store, context)
    assert_bundle((store / ".openclaw" / "workspace" / "MEMORYD.md").read_text("utf-8"), "openclaw")
    search = next(c for c in commands if " search " in c)
    hits = json.loads(run_documented(store, search.replace('"acme renewal"', "Acme")).stdout)
    assert hits and set(hits[0]) == {
        "kind", "id", "ref", "path", "line", "text", "status", "tier", "score"
    }  # fmt: skip
