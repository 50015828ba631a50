"""The one-shot writing commands wait for the single-writer lock as long as they are told: a test
passes no wait and sees at once the exit 75 a held lock gives (LockHeldError)."""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memoryd.cli.heartbeat import cmd_heartbeat
from memoryd.cli.review import cmd_review
from memoryd.cli.rewrite import cmd_rewrite
from memoryd.cli.status import cmd_retry
from memoryd.errors import EXIT_TEMPFAIL, LockHeldError
from memoryd.jobs.correct import correct
from memoryd.jobs.lock import single_writer
from memoryd.settings import LoadedConfig, parse_settings, state_directory

Run = Callable[[LoadedConfig], int]


def _namespace(**values: object) -> argparse.Namespace:
    return argparse.Namespace(**values)


COMMANDS: dict[str, Run] = {
    "heartbeat": lambda config: cmd_heartbeat(
        _namespace(dry_run=False, online=False, text=False, seconds_per_call=None),
        config,
        {},
        io.StringIO(),
        lock_wait_seconds=0,
    ),
    "rewrite": lambda config: cmd_rewrite(
        _namespace(dry_run=False), config, {}, io.StringIO(), lock_wait_seconds=0
    ),
    "retry": lambda config: cmd_retry(_namespace(), config, {}, io.StringIO(), lock_wait_seconds=0),
    "review accept": lambda config: cmd_review(
        _namespace(action="accept", id="r-1", json=False),
        config,
        {},
        io.StringIO(),
        lock_wait_seconds=0,
    ),
    "forget": lambda config: correct(
        config, {}, io.StringIO(), fact_id="f-1", reason="", text=None, lock_wait_seconds=0
    ),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_held_lock_is_not_waited_for_when_told_not_to(tmp_path: Path, command: str) -> None:
    settings = parse_settings(
        {
            "store": {"path": str(tmp_path / "store")},
            "state": {"path": str(tmp_path / "state")},
            "llm": {"provider": "markers"},
        }
    )
    config = LoadedConfig(tmp_path / "memoryd.toml", settings)
    started = time.monotonic()
    with single_writer(state_directory(settings, {})), pytest.raises(LockHeldError) as held:
        COMMANDS[command](config)
    assert held.value.exit_code == EXIT_TEMPFAIL
    assert time.monotonic() - started < 5
