"""Every command of `memoryd`, by name, as the parser dispatches them (docs/cli.md).

Each command takes the parsed arguments, the loaded configuration, the process environment and
the stream for results, and returns the exit code. Each command group is a module of its own,
imported only when one of its commands runs: lazy imports keep `--version` and an idle heartbeat
fast, so a command pays only for the jobs it runs (the daemon's scheduler, the rewrite, the
checks). The reading commands, whose parser entries `memoryd.cli` always builds, are in
`memoryd.cli.reading`.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from typing import TextIO, cast

from memoryd.settings import LoadedConfig

Command = Callable[[argparse.Namespace, LoadedConfig, Mapping[str, str], TextIO], int]

# The module of `memoryd.cli` and the function of each command.
COMMAND_MODULES: dict[str, tuple[str, str]] = {
    "check": ("check", "cmd_check"),
    "init": ("init", "cmd_init"),
    "heartbeat": ("heartbeat", "cmd_heartbeat"),
    "rewrite": ("rewrite", "cmd_rewrite"),
    "explain": ("rewrite", "cmd_explain"),
    "run": ("run", "cmd_run"),
    "status": ("status", "cmd_status"),
    "retry": ("status", "cmd_retry"),
    "review": ("review", "cmd_review"),
    "context": ("reading", "cmd_context"),
    "search": ("reading", "cmd_search"),
    "mcp": ("reading", "cmd_mcp"),
    "forget": ("reading", "cmd_forget"),
    "supersede": ("reading", "cmd_supersede"),
    "share": ("share", "cmd_share"),
    "connect": ("connect", "cmd_connect"),
    "disconnect": ("connect", "cmd_disconnect"),
    "eval": ("eval", "cmd_eval"),
    "reprocess": ("reprocess", "cmd_reprocess"),
}


def load_command(name: str) -> Command:
    """The function of the command `name`, its module imported now. Raise KeyError for a name
    the parser does not know."""
    module_name, function_name = COMMAND_MODULES[name]
    module = importlib.import_module(f"memoryd.cli.{module_name}")
    return cast("Command", getattr(module, function_name))
