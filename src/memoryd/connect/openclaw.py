"""OpenClaw: the MCP server in `openclaw.json`, and a marked block in the workspace's
`AGENTS.md` telling the agent to load its memory at the start of a session.

OpenClaw injects a fixed set of bootstrap files of the agent's workspace into every session
(`AGENTS.md`, `SOUL.md`, `TOOLS.md`, `IDENTITY.md`, `USER.md`, `HEARTBEAT.md`, `BOOTSTRAP.md`,
`MEMORY.md`; `MEMORY.md` is cut at 12,000 characters), and nothing else: a file of another name
is never read by itself. Its outbound MCP servers live under `mcp.servers.<name>`
(`command`, `args`) of `~/.openclaw/openclaw.json` (docs.openclaw.ai, cli/mcp and
gateway/configuration-reference). `OPENCLAW_STATE_DIR` moves `~/.openclaw`,
`OPENCLAW_CONFIG_PATH` the file; the workspace is `agents.defaults.workspace` of that file,
else `~/.openclaw/workspace`, or with `--scope project` the project folder itself.

The file is JSON5 for OpenClaw; memoryd edits it only when it is plain JSON (comments and
trailing commas are refused with the parse error, untouched).
"""

from __future__ import annotations

from pathlib import Path

from memoryd.connect.files import (
    FileEdit,
    drop_if_empty,
    dump_json,
    json_section,
    load_json_object,
    read_text,
    with_block,
    without_block_restored,
)
from memoryd.connect.target import SERVER_NAME, Target

BOOTSTRAP_FILE = "AGENTS.md"


def plan(target: Target, *, connect: bool) -> list[FileEdit]:
    """The edits that connect memoryd to OpenClaw (or, `connect=False`, disconnect it)."""
    config_path = _config_path(target)
    config_before = read_text(config_path)
    config = load_json_object(config_path, config_before)
    workspace = target.project if target.scope == "project" else _workspace(target, config)
    mcp = json_section(config, config_path, "mcp")
    servers = json_section(mcp, config_path, "servers")
    if connect:
        wanted = {"command": target.executable, "args": target.mcp_arguments()}
        if servers.get(SERVER_NAME) != wanted:
            servers[SERVER_NAME] = wanted
    else:
        servers.pop(SERVER_NAME, None)
    drop_if_empty(mcp, "servers")
    drop_if_empty(config, "mcp")
    bootstrap = workspace / BOOTSTRAP_FILE
    text = read_text(bootstrap)
    return [
        FileEdit(config_path, config_before, dump_json(config, config_before, config_path)),
        FileEdit(
            bootstrap,
            text,
            with_block(text, _instructions(target))
            if connect
            else without_block_restored(bootstrap, text),
        ),
    ]


def _state_dir(target: Target) -> Path:
    configured = target.environ.get("OPENCLAW_STATE_DIR")
    return Path(configured) if configured else target.home / ".openclaw"


def _config_path(target: Target) -> Path:
    configured = target.environ.get("OPENCLAW_CONFIG_PATH")
    return Path(configured) if configured else _state_dir(target) / "openclaw.json"


def _workspace(target: Target, config: dict[str, object]) -> Path:
    agents = config.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    configured = defaults.get("workspace") if isinstance(defaults, dict) else None
    if isinstance(configured, str) and configured:
        path = Path(configured)
        return target.home / path.relative_to("~") if configured.startswith("~") else path
    return _state_dir(target) / "workspace"


def _instructions(target: Target) -> str:
    return (
        "## Memory (memoryd)\n"
        "\n"
        "Your long-term memory is kept by memoryd and reached through its MCP server "
        f"`{SERVER_NAME}`.\n"
        "At the start of every session, call its `context` tool once and read what it returns: "
        "how the user works, your skills, the people and projects that matter now, today's "
        "notes.\n"
        "Before asking the user something they may have told you before, call `search`; "
        "`get_entity` gives everything known about one person or project; `remember` keeps "
        "something worth remembering.\n"
        f"Without MCP, the same bundle is printed by `{target.context_command('plain')}`.\n"
    )
