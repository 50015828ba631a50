"""Claude Code: a SessionStart hook that loads the bundle, and the MCP server.

Where Claude Code 2.1 reads them (checked against the CLI itself):

- hooks: `~/.claude/settings.json` (user) or `.claude/settings.json` (project), under
  `hooks.SessionStart`, matcher `startup|clear|compact` (a new session, `/clear`, and after a
  compaction, when the earlier bundle has been summarized away);
- the MCP server, user scope: `mcpServers` of `~/.claude.json`, the entry
  `claude mcp add --scope user` writes (`type`, `command`, `args`, `env`);
- project scope: `.mcp.json` in the project, and its approval: the name in
  `enabledMcpjsonServers` of `.claude/settings.local.json`, the file Claude Code's own approval
  dialog writes, without which the server stays "pending approval". Claude Code honours that
  file only in a trusted workspace or a git work tree where the file is not tracked (it gates
  a settings file a clone could have brought); elsewhere `connect` says so.

`CLAUDE_CONFIG_DIR`, when set, replaces `~/.claude` and holds `.claude.json` too.
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
)
from memoryd.connect.target import (
    SERVER_NAME,
    Target,
    session_hook_edit,
)
from memoryd.errors import AgentConfigError

OUTPUT_FORMAT = "claude-code"
MATCHER = "startup|clear|compact"


def plan(target: Target, *, connect: bool) -> list[FileEdit]:
    """The edits that connect memoryd to Claude Code (or, `connect=False`, disconnect it)."""
    config_dir = _config_dir(target)
    if target.scope == "user":
        settings = config_dir / "settings.json"
        servers = (
            config_dir / ".claude.json"
            if "CLAUDE_CONFIG_DIR" in target.environ
            else target.home / ".claude.json"
        )
        return [_hook_edit(target, settings, connect), _server_edit(target, servers, connect)]
    project = target.project / ".claude"
    return [
        _hook_edit(target, project / "settings.json", connect),
        _server_edit(target, target.project / ".mcp.json", connect),
        _approval_edit(project / "settings.local.json", connect),
    ]


def _config_dir(target: Target) -> Path:
    configured = target.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else target.home / ".claude"


def _hook_edit(target: Target, path: Path, connect: bool) -> FileEdit:
    return session_hook_edit(target, path, connect, matcher=MATCHER, output_format=OUTPUT_FORMAT)


def _server_edit(target: Target, path: Path, connect: bool) -> FileEdit:
    before = read_text(path)
    data = load_json_object(path, before)
    servers = json_section(data, path, "mcpServers")
    if connect:
        wanted = {
            "type": "stdio",
            "command": target.executable,
            "args": target.mcp_arguments(),
            "env": {},
        }
        if servers.get(SERVER_NAME) != wanted:
            servers[SERVER_NAME] = wanted
    else:
        servers.pop(SERVER_NAME, None)
    drop_if_empty(data, "mcpServers")
    return FileEdit(path, before, dump_json(data, before, path))


def _approval_edit(path: Path, connect: bool) -> FileEdit:
    before = read_text(path)
    settings = load_json_object(path, before)
    approved = settings.setdefault("enabledMcpjsonServers", [])
    if not isinstance(approved, list):
        raise AgentConfigError(path, "'enabledMcpjsonServers' is not a list")
    if connect and SERVER_NAME not in approved:
        approved.append(SERVER_NAME)
    if not connect:
        approved[:] = [name for name in approved if name != SERVER_NAME]
    drop_if_empty(settings, "enabledMcpjsonServers")
    return FileEdit(path, before, dump_json(settings, before, path))


def notes(target: Target) -> list[str]:
    """What the user must still do after connecting."""
    if target.scope != "project":
        return []
    folder = target.project
    if any((parent / ".git").exists() for parent in (folder, *folder.parents)):
        return []
    return [
        f"{folder} is not in a git work tree: Claude Code honours the approval in "
        ".claude/settings.local.json only there (or once you trust the folder), so approve the "
        "memoryd server when `claude` first asks"
    ]
