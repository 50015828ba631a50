"""`memoryd run` (docs/cli.md): the daemon."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TextIO

from memoryd.daemon import scheduler
from memoryd.daemon.notify import Notifier
from memoryd.daemon.preflight import store_not_ready, warn_if_root
from memoryd.errors import EXIT_CONFIG, EXIT_FAILED, ConfigError, LockHeldError, TransientError
from memoryd.jobs.environment import Environment
from memoryd.jobs.lock import daemon_instance
from memoryd.logs import get_logger
from memoryd.reading.accesses import prepare_state_directory
from memoryd.settings import LoadedConfig, check_environment, state_directory

# The events of every command are logged under the command line's one logger name.
log = get_logger("memoryd.cli")


def cmd_run(
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], _out: TextIO
) -> int:
    """The daemon. A configuration that cannot work exits 78 before anything is scheduled."""
    report = check_environment(config.settings, environ)
    report.problems.extend(store_not_ready(config.settings))
    if not report.ok:
        raise ConfigError(config.path, report.problems)
    for warning in report.warnings:
        log.warning("config.warning", path=str(config.path), warning=warning)
    warn_if_root(config.settings, sys.stderr)
    state_dir = state_directory(config.settings, environ)
    try:
        with daemon_instance(state_dir):
            return _run_daemon(config, environ)
    except LockHeldError as error:
        # A second daemon on one configuration: an operator's mistake (two units, or one started
        # by hand beside the unit), not something a restart fixes, so 78, which the unit does
        # not restart; never 75 (docs/cli.md).
        log.error("daemon.refused", holder_pid=error.holder_pid, lock=str(error.lock_path))
        holder = f"pid {error.holder_pid}" if error.holder_pid else "another process"
        print(
            f"memoryd run: another memoryd daemon ({holder}) already runs with the state "
            f"folder {state_dir}; stop it first",
            file=sys.stderr,
        )
        return EXIT_CONFIG


def _run_daemon(config: LoadedConfig, environ: Mapping[str, str]) -> int:
    # Agents of memoryd's group queue their reads from their first one (operator's guide 2.6).
    prepare_state_directory(state_directory(config.settings, environ))
    # Looked up on the module at each run, so that a test can stand in for the daemon.
    daemon = scheduler.Daemon(config, Environment.live(environ, long_lived=True), Notifier(environ))
    try:
        return daemon.run()
    except TransientError as error:
        # 75 would make systemd restart the daemon in a tight loop (docs/cli.md); a failure at
        # start-up (e.g. the state database locked) is an ordinary failure, restarted after
        # RestartSec.
        log.error("daemon.failed", error=str(error), error_type=type(error).__name__)
        return EXIT_FAILED
