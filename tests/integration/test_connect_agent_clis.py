"""`memoryd connect` proven with the real CLIs: Claude Code 2.1.197 and Codex 0.171.0 (from
npm, cached outside the work tree) run one prompt each against a local model stub, and the
request the stub records carries the whole memory bundle and memoryd's MCP tools; after
`disconnect`, neither, while the user's own hook still runs. Run alone with
`pytest -m agent_clis`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.fakes.agent_model_stub import AgentModelStub
from tests.support.agent_clis import AgentClis, installed_clis, strings_in, write_launcher
from tests.support.cli import write_config
from tests.support.reading import memoryd, write_transcript

from memoryd.errors import EXIT_OK

pytestmark = [pytest.mark.slow, pytest.mark.agent_clis]

MARKER = "- The user's marker line for the connect test: the sky over Lisbon is teal"
USER_HOOK_MARKER = "USER-OWN-HOOK-RAN"
MCP_TOOLS = ("search", "get_entity", "context", "remember")
CODEX_WAIT = ("-c", "mcp_optional_startup_grace_ms=60000")


@pytest.fixture(scope="module")
def clis() -> AgentClis:
    found = installed_clis()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@dataclass(frozen=True)
class World:
    root: Path
    home: Path
    environ: dict[str, str]
    stub: AgentModelStub


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A store whose plain bundle is over Claude Code's 10,000-character hook limit (init, a
    heartbeat, a long MEMORY.md), a HOME, a launcher."""
    write_config(tmp_path)
    write_transcript(tmp_path)
    assert memoryd(tmp_path, "init").returncode == EXIT_OK
    assert memoryd(tmp_path, "heartbeat").returncode == EXIT_OK
    tacit = tmp_path / "store" / "MEMORY.md"
    lines = [MARKER] + [
        f"- Habit {n}: prefers reviews of change {n} before noon, with the tests named first"
        for n in range(200)
    ]
    tacit.write_text(tacit.read_text(encoding="utf-8") + "\n".join(lines) + "\n", "utf-8")
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    launcher = write_launcher(tmp_path / "bin")
    environ = {
        "PATH": f"{launcher.parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    with AgentModelStub() as stub:
        yield World(tmp_path, home, environ, stub)


def run_memoryd(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    root = world.root
    return subprocess.run(
        [str(root / "bin" / "memoryd"), "--config", str(root / "memoryd.toml"), *args],
        env=world.environ,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def bundle(world: World, output_format: str) -> str:
    """What the hook hands the model: Claude Code's hook prints the bundle, Codex's prints it
    inside its SessionStart JSON."""
    args = ("--log-level", "warning", "context", "--agent", "ops", "--format", output_format)
    printed = run_memoryd(world, *args)
    assert printed.returncode == EXIT_OK, printed.stderr
    text = printed.stdout
    if output_format == "codex":
        answer = json.loads(text)
        assert set(answer) == {"hookSpecificOutput"}
        text = answer["hookSpecificOutput"]["additionalContext"]
    assert MARKER in text and len(text) > 4000
    return str(text)


# The files `connect` edits that the CLIs do not write themselves (Claude Code rewrites
# ~/.claude.json at every start: it is checked by its `mcpServers` alone).
EDITED = (".claude/settings.json", ".codex/config.toml", ".codex/hooks.json")


def files_of(home: Path) -> dict[str, str]:
    return {
        name: (home / name).read_text(encoding="utf-8")
        for name in EDITED
        if (home / name).is_file()
    }


def claude_servers(home: Path) -> dict[str, object]:
    data = json.loads((home / ".claude.json").read_text(encoding="utf-8"))
    servers = data.get("mcpServers", {})
    assert isinstance(servers, dict)
    return servers


def connect_twice(world: World, runtime: str) -> dict[str, str]:
    """Connect (something changes), connect again (nothing does); return the files connected."""
    home = world.home
    first = run_memoryd(world, "connect", runtime, "--agent", "ops")
    assert first.returncode == EXIT_OK, first.stderr
    assert "created" in first.stdout or "updated" in first.stdout
    connected = files_of(home)
    second = run_memoryd(world, "connect", runtime, "--agent", "ops", "--json")
    assert {f["action"] for f in json.loads(second.stdout)["files"]} == {"unchanged"}
    assert files_of(home) == connected
    return connected


def request_text(stub: AgentModelStub, path: str) -> tuple[str, list[str]]:
    """The text of the stub's main request on `path` (the one with tools), and its tool names."""
    bodies = [body for body in stub.bodies(path) if body.get("tools")]
    assert bodies, f"no model request with tools on {path}: {stub.requests!r:.500}"
    body = bodies[-1]
    names = [str(t.get("name") or t.get("type")) for t in body["tools"]]
    for tool in body["tools"]:  # Codex groups an MCP server's tools in a namespace
        names += [str(t.get("name")) for t in tool.get("tools", []) if isinstance(t, dict)]
    return "\n".join(strings_in(body)), names


def test_claude_code_gets_the_bundle_and_the_tools(clis: AgentClis, world: World) -> None:
    home, stub = world.home, world.stub
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    own = {
        "matcher": "startup",
        "hooks": [{"type": "command", "command": "echo " + USER_HOOK_MARKER}],
    }
    settings.write_text(json.dumps({"hooks": {"SessionStart": [own]}}, indent=2) + "\n", "utf-8")
    original = files_of(home)
    connect_twice(world, "claude-code")
    assert "memoryd" in claude_servers(home)
    printed = bundle(world, "claude-code")
    plain = run_memoryd(world, "--log-level", "warning", "context", "--agent", "ops").stdout
    assert len(plain) > 10_000 >= len(printed)  # plain would reach the model as a preview

    def session() -> tuple[str, list[str]]:
        environ = {
            **world.environ,
            "ANTHROPIC_BASE_URL": stub.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-dummy",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # Claude Code waits this long (ms) for an MCP server to start: memoryd's Python
            # start-up under a loaded test machine can take seconds.
            "MCP_TIMEOUT": "60000",
        }
        stub.requests.clear()
        result = subprocess.run(
            [str(clis.claude), "-p", "hi"],
            env=environ,
            cwd=home / "project",
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return request_text(stub, "/v1/messages")

    text, tools = session()
    assert printed.strip() in text  # the whole bundle, not a preview
    assert printed.strip().splitlines()[-1] in text and MARKER in text
    assert USER_HOOK_MARKER in text
    assert {f"mcp__memoryd__{name}" for name in MCP_TOOLS} <= set(tools), tools
    print(f"claude-code: bundle {len(printed)} chars printed, all received; tools {tools}")

    assert run_memoryd(world, "disconnect", "claude-code").returncode == EXIT_OK
    assert files_of(home) == original
    assert "memoryd" not in claude_servers(home)
    text, tools = session()
    assert MARKER not in text and USER_HOOK_MARKER in text
    assert not [name for name in tools if name.startswith("mcp__memoryd__")]


def test_codex_gets_the_bundle_and_the_tools(clis: AgentClis, world: World) -> None:
    home, stub = world.home, world.stub
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        "# the user's own settings\n"
        'model = "gpt-stub"\n'
        'model_provider = "stub"\n\n'
        "[model_providers.stub]\n"
        'name = "stub"\n'
        f'base_url = "{stub.base_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "STUB_API_KEY"\n',
        encoding="utf-8",
    )
    own = {
        "matcher": "startup",
        "hooks": [{"type": "command", "command": "echo " + USER_HOOK_MARKER}],
    }
    (codex_home / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [own]}}) + "\n")
    original = files_of(home)
    connect_twice(world, "codex")
    printed = bundle(world, "codex")

    def session() -> tuple[str, list[str]]:
        environ = {**world.environ, "STUB_API_KEY": "dummy"}
        stub.requests.clear()
        # Codex gives an optional MCP server 1 s to start before a turn goes without its tools;
        # memoryd's (a Python process) can take longer on a loaded machine. The test waits, as
        # an operator on a busy host would configure it (docs/agents.md).
        command = [str(clis.codex), "exec", "--skip-git-repo-check", *CODEX_WAIT]
        result = subprocess.run(
            [*command, "--dangerously-bypass-hook-trust", "hi"],
            env=environ,
            cwd=home / "project",
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return request_text(stub, "/v1/responses")

    text, tools = session()
    assert printed.strip() in text
    assert printed.strip().splitlines()[-1] in text and MARKER in text
    assert USER_HOOK_MARKER in text
    assert "mcp__memoryd" in tools and set(MCP_TOOLS) <= set(tools), tools
    print(f"codex: bundle {len(printed)} chars printed, all received; tools {tools}")

    assert run_memoryd(world, "disconnect", "codex").returncode == EXIT_OK
    assert files_of(home) == original
    text, tools = session()
    assert MARKER not in text and USER_HOOK_MARKER in text
    assert not [name for name in tools if "memoryd" in name]


def test_claude_code_project_scope_server_is_approved(clis: AgentClis, world: World) -> None:
    """`claude mcp get` shows a `.mcp.json` server without its approval as pending; connected
    with `--scope project` (in a git work tree), memoryd's is approved and connects."""
    project = world.home / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=True)

    def status() -> str:
        result = subprocess.run(
            [str(clis.claude), "mcp", "get", "memoryd"],
            env=world.environ,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return result.stdout + result.stderr

    args = ("claude-code", "--agent", "ops", "--scope", "project", "--project", str(project))
    connected = run_memoryd(world, "connect", *args)
    assert connected.returncode == EXIT_OK, connected.stderr
    assert "note:" not in connected.stdout
    assert "Connected" in status()
    approval = project / ".claude" / "settings.local.json"
    approval.write_text("{}\n", encoding="utf-8")
    assert "Pending approval" in status()  # what the approval is for
    assert run_memoryd(world, "connect", *args).returncode == EXIT_OK
    assert "Connected" in status()
    assert run_memoryd(world, "disconnect", *args).returncode == EXIT_OK
    assert 'No MCP server named "memoryd"' in status()
    assert approval.read_text(encoding="utf-8") == "{}\n"
