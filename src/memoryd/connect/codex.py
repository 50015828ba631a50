"""Codex: the MCP server in `config.toml` and a SessionStart hook in `hooks.json`.

Where Codex 0.171 reads them (its documentation, developers.openai.com/codex/hooks and
/codex/mcp, and the binary's own config schema): `[mcp_servers.memoryd]` (`command`, `args`)
in `$CODEX_HOME/config.toml` (default `~/.codex`), or the project's `.codex/config.toml`; hooks
in `hooks.json` next to that config layer, the same shape as Claude Code's
(`hooks.SessionStart` -> `[{matcher, hooks: [{type: "command", command}]}]`). Hooks are on by
default (`[features] hooks`, `codex_hooks` its old name); memoryd never switches the feature on
or off, it only warns when the user turned it off. Codex runs a new, unmanaged hook only once
it is trusted (its `/hooks` screen, or `--dangerously-bypass-hook-trust` in automation):
`connect` says so.

`config.toml` is edited with tomlkit, which keeps the user's comments, order and spacing.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from memoryd.connect.files import (
    FileEdit,
    backup_text,
    read_text,
)
from memoryd.connect.target import SERVER_NAME, Target, session_hook_edit
from memoryd.errors import AgentConfigError

OUTPUT_FORMAT = "codex"
STARTUP_TIMEOUT_SECONDS = 60.0
MATCHER = "startup|clear"


def codex_dir(target: Target) -> Path:
    if target.scope == "project":
        return target.project / ".codex"
    configured = target.environ.get("CODEX_HOME")
    return Path(configured) if configured else target.home / ".codex"


def plan(target: Target, *, connect: bool) -> list[FileEdit]:
    """The edits that connect memoryd to Codex (or, `connect=False`, disconnect it)."""
    folder = codex_dir(target)
    return [
        _config_edit(target, folder / "config.toml", connect),
        _hooks_edit(target, folder / "hooks.json", connect),
    ]


def notes(target: Target) -> list[str]:
    """What the user must still do or know after connecting."""
    found = [
        "Codex runs a new hook only once it is trusted: open `codex`, review memoryd's "
        "SessionStart hook in /hooks and trust it (automation: --dangerously-bypass-hook-trust)"
    ]
    config = codex_dir(target) / "config.toml"
    text = read_text(config) or ""
    features = tomllib.loads(text).get("features", {}) if text else {}
    if isinstance(features, dict) and False in (features.get("hooks"), features.get("codex_hooks")):
        found.append(f"hooks are switched off in {config} ([features] hooks = false)")
    return found


def _config_edit(target: Target, path: Path, connect: bool) -> FileEdit:
    before = read_text(path)
    document = _parse(path, before or "")
    servers = document.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise AgentConfigError(path, "'mcp_servers' is not a table")
    wanted: dict[str, Any] = {
        "command": target.executable,
        "args": target.mcp_arguments(),
        "startup_timeout_sec": STARTUP_TIMEOUT_SECONDS,
    }
    if connect:
        current = servers.get(SERVER_NAME) if servers is not None else None
        if current is None or _plain(current) != wanted:
            if servers is None:
                servers = tomlkit.table(is_super_table=True)
                document["mcp_servers"] = servers
            table = tomlkit.table()
            for key, value in wanted.items():
                table[key] = value
            servers[SERVER_NAME] = table
    elif servers is not None and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del document["mcp_servers"]
    after = tomlkit.dumps(document)
    if after == (before or ""):
        return FileEdit(path, before, before)
    backup = backup_text(path)
    if backup is not None and _same_toml(backup, after):
        after = backup  # what connect changed, undone: the user's own bytes
    return FileEdit(path, before, after if after.strip() else None)


def _hooks_edit(target: Target, path: Path, connect: bool) -> FileEdit:
    return session_hook_edit(target, path, connect, matcher=MATCHER, output_format=OUTPUT_FORMAT)


def _parse(path: Path, text: str) -> tomlkit.TOMLDocument:
    try:
        tomllib.loads(text)
        return tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.ParseError) as error:
        raise AgentConfigError(path, f"is not valid TOML: {error}") from error


def _same_toml(first: str, second: str) -> bool:
    """Whether two TOML texts hold the same tables and values, in the same order."""
    try:
        return json.dumps(tomllib.loads(first), default=str) == json.dumps(
            tomllib.loads(second), default=str
        )
    except tomllib.TOMLDecodeError:
        return False


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value
