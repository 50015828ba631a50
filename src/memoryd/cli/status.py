"""`memoryd status [--json]` and `memoryd retry` (docs/cli.md): what memoryd is doing and has
done, and the quarantined chunks put back in the queue.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TextIO

from memoryd.daemon.status import collect_status, render_status
from memoryd.errors import EXIT_OK
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment, open_state
from memoryd.jobs.lock import single_writer
from memoryd.logs import get_logger
from memoryd.settings import LoadedConfig, state_directory

# The events of every command are logged under the command line's one logger name.
log = get_logger("memoryd.cli")


def cmd_status(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    report = collect_status(config.settings, Environment.live(environ))
    if args.json:
        out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    else:
        out.write(render_status(report))
    return EXIT_OK


def cmd_retry(
    _args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    """Put every quarantined chunk back in the queue; the next heartbeat tries them again."""
    env = Environment.live(environ)
    settings = config.settings
    with (
        single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds),
        open_state(settings, env) as state,
    ):
        count = state.failures.requeue_all(env.clock())
    log.info("retry.finished", requeued=count)
    out.write(f"requeued {count} quarantined chunk{'s' * (count != 1)}\n")
    return EXIT_OK
