"""`memoryd connect` / `memoryd disconnect`: write memoryd into an agent runtime's own
configuration (docs/agents.md), and take it out again.

One module per runtime plans its edits as `FileEdit`s (`files.py` reads, parses, diffs, backs up
and writes them). The rules every runtime keeps: a second connect changes nothing, byte for
byte; disconnect removes only what connect added, so the user's own hooks, servers and text
survive both; JSON and TOML are edited structurally, keeping the user's keys and order; a file
that cannot be parsed is refused, untouched; nothing is written through a symlink.
"""

from __future__ import annotations

from collections.abc import Callable

from memoryd.connect import claude_code, codex, openclaw, paperclip
from memoryd.connect.files import BACKUP_SUFFIX, FileEdit, apply_edits
from memoryd.connect.target import SERVER_NAME, Target

Planner = Callable[..., list[FileEdit]]

RUNTIMES: dict[str, Planner] = {
    "claude-code": claude_code.plan,
    "codex": codex.plan,
    "openclaw": openclaw.plan,
    "paperclip": paperclip.plan,
}


def plan_edits(runtime: str, target: Target, *, connect: bool) -> list[FileEdit]:
    """Every file `connect` (or `disconnect`) would touch for `runtime`, changed or not."""
    return RUNTIMES[runtime](target, connect=connect)


def notes(runtime: str, target: Target) -> list[str]:
    """What the user must still do after connecting `runtime`."""
    if runtime == "codex":
        return codex.notes(target)
    if runtime == "claude-code":
        return claude_code.notes(target)
    if runtime == "paperclip":
        return [
            f"import the skill into your Paperclip company from {paperclip.skill_path(target)} "
            "and give it to the agents that should remember"
        ]
    return []


__all__ = [
    "BACKUP_SUFFIX",
    "RUNTIMES",
    "SERVER_NAME",
    "FileEdit",
    "Target",
    "apply_edits",
    "notes",
    "plan_edits",
]
