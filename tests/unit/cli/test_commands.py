"""Every command the parser knows is found by name, in a module of its own group."""

from __future__ import annotations

import argparse

from memoryd.cli import build_parser
from memoryd.cli.commands import COMMAND_MODULES, load_command


def _parser_commands() -> set[str]:
    parser = build_parser()
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def test_every_parsed_command_is_found_by_name() -> None:
    assert set(COMMAND_MODULES) == _parser_commands()
    for name in COMMAND_MODULES:
        assert callable(load_command(name))
