"""The operator commands `run`, `status` and `retry`, as the CLI calls them (DESIGN §2).

Each takes the parsed arguments, the loaded configuration, the process environment and the
stream for results, and returns the exit code. They are entry points: this is where the real
clock is read and handed down.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TextIO

from memoryd.daemon.jobs import LOCK_WAIT_SECONDS, Environment, open_state
from memoryd.daemon.lock import single_writer
from memoryd.daemon.notify import Notifier
from memoryd.daemon.scheduler import Daemon
from memoryd.daemon.status import collect_status, render_status
from memoryd.errors import EXIT_FAILED, EXIT_OK, ConfigError, TransientError
from memoryd.logs import get_logger
from memoryd.settings import LoadedConfig, check_environment, state_directory

log = get_logger(__name__)


def cmd_run(
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], _out: TextIO
) -> int:
    """The daemon. A configuration that cannot work exits 78 before anything is scheduled."""
    report = check_environment(config.settings, environ)
    if not report.ok:
        raise ConfigError(config.path, report.problems)
    for warning in report.warnings:
        log.warning("config.warning", path=str(config.path), warning=warning)
    daemon = Daemon(config, Environment.live(environ), Notifier(environ))
    try:
        return daemon.run()
    except TransientError as error:
        # 75 would make systemd restart the daemon in a tight loop (DESIGN §2); a failure at
        # start-up (e.g. the state database locked) is an ordinary failure, restarted after
        # RestartSec.
        log.error("daemon.failed", error=str(error), error_type=type(error).__name__)
        return EXIT_FAILED


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
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    """Put every quarantined chunk back in the queue; the next heartbeat tries them again."""
    env = Environment.live(environ)
    settings = config.settings
    with (
        single_writer(state_directory(settings, environ), wait_seconds=LOCK_WAIT_SECONDS),
        open_state(settings, env) as state,
    ):
        count = state.failures.requeue_all(env.clock())
    log.info("retry.finished", requeued=count)
    out.write(f"requeued {count} quarantined chunk{'s' * (count != 1)}\n")
    return EXIT_OK
