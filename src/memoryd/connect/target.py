"""What `memoryd connect` is asked to do, and the pieces every runtime shares: the memoryd
commands it writes into a runtime's configuration, and the edit of a Claude-style hook list.

The commands carry the absolute configuration path and `--log-level warning`, so that a hook's
stdout is the bundle alone and the runtime finds the same store whatever its working folder.
An entry is memoryd's when its command runs a program named `memoryd` with the `context`
subcommand and the `--format` of that runtime: a hook the user wrote by hand (without
`--format`) is never taken for one of ours.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.connect.files import FileEdit, dump_json, json_section, load_json_object, read_text
from memoryd.errors import AgentConfigError

SERVER_NAME = "memoryd"


@dataclass(frozen=True)
class Target:
    """One connect or disconnect: which memoryd runs, for which agent, where."""

    executable: str
    config_path: Path
    agent: str
    scope: str  # "user" or "project"
    project: Path
    home: Path
    environ: Mapping[str, str]

    def base_command(self) -> list[str]:
        return [self.executable, "--config", str(self.config_path), "--log-level", "warning"]

    def context_command(self, output_format: str) -> str:
        """The shell command of a start-of-session hook."""
        words = [*self.base_command(), "context", "--agent", self.agent, "--format", output_format]
        return shlex.join(words)

    def mcp_arguments(self) -> list[str]:
        """The arguments of the MCP server's command (the executable is `executable`)."""
        return [*self.base_command()[1:], "mcp", "--agent", self.agent]


def is_our_hook(command: object, output_format: str) -> bool:
    """Whether a hook's command is one `memoryd connect` wrote for this runtime."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words or Path(words[0]).name != "memoryd" or "context" not in words:
        return False
    return any(a == "--format" and b == output_format for a, b in itertools.pairwise(words))


def session_hook_edit(
    target: Target, path: Path, connect: bool, *, matcher: str, output_format: str
) -> FileEdit:
    """The edit of a Claude-style settings file at `path` that adds (connect) or removes
    memoryd's SessionStart hook running `context --format output_format`."""
    before = read_text(path)
    settings = load_json_object(path, before)
    if connect:
        command = target.context_command(output_format)
        set_session_hook(settings, path, matcher, command, output_format)
    else:
        remove_session_hook(settings, path, output_format)
    return FileEdit(path, before, dump_json(settings, before, path))


def set_session_hook(
    settings: dict[str, Any], path: Path, matcher: str, command: str, output_format: str
) -> None:
    """Put memoryd's SessionStart hook into `settings` (Claude Code's and Codex's shape:
    hooks -> event -> groups of {matcher, hooks: [{type, command}]}). An identical one is left
    where it is; a different one of ours is replaced by a group at the end."""
    groups = _session_groups(settings, path)
    for group in groups:
        if not isinstance(group, dict):
            continue  # not a group of Claude's shape: the user's, left as it is
        hooks = group.get("hooks")
        if group.get("matcher") == matcher and isinstance(hooks, list) and len(hooks) == 1:
            hook = hooks[0]
            if isinstance(hook, dict) and hook == {"type": "command", "command": command}:
                others = [g for g in groups if g is not group]
                if not any(_our_hooks(g, output_format) for g in others):
                    return
    remove_session_hook(settings, path, output_format)
    groups = _session_groups(settings, path)
    groups.append({"matcher": matcher, "hooks": [{"type": "command", "command": command}]})


def remove_session_hook(settings: dict[str, Any], path: Path, output_format: str) -> None:
    """Remove memoryd's SessionStart hooks from `settings`; a group, the event and `hooks` go
    too when nothing else is left in them."""
    if "hooks" not in settings:
        return
    groups = _session_groups(settings, path)
    kept = []
    for group in groups:
        if not _our_hooks(group, output_format):
            kept.append(group)
            continue
        rest = [
            hook
            for hook in group["hooks"]
            if not (isinstance(hook, dict) and is_our_hook(hook.get("command"), output_format))
        ]
        if rest:
            kept.append({**group, "hooks": rest})
    groups[:] = kept
    hooks = settings["hooks"]
    if not groups:
        del hooks["SessionStart"]
    if not hooks:
        del settings["hooks"]


def _session_groups(settings: dict[str, Any], path: Path) -> list[Any]:
    hooks = json_section(settings, path, "hooks")
    groups = hooks.setdefault("SessionStart", [])
    if not isinstance(groups, list):
        raise AgentConfigError(path, "'hooks.SessionStart' is not a list")
    return groups


def _our_hooks(group: object, output_format: str) -> bool:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return False
    return any(
        isinstance(hook, dict) and is_our_hook(hook.get("command"), output_format)
        for hook in group["hooks"]
    )
