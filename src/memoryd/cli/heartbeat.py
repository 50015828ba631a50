"""`memoryd heartbeat [--dry-run [--online] [--text] [--seconds-per-call S]]` (docs/cli.md): one
heartbeat by hand, under the writer's lock, or what it would send (counted by the endpoint with
`--online`) and the whole backlog's bill (as a table with `--text`, `memoryd.cli.bill`).

It exits 78 when the LLM's account, key, model or endpoint cannot be used
(`HeartbeatReport.exit_code`) or the store is not made yet (`memoryd init`), 75 when another
memoryd holds the lock past the wait.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TextIO

from memoryd.cli.progress import TerminalProgress
from memoryd.daemon.preflight import store_not_ready, warn_if_root
from memoryd.errors import EXIT_OK, EXIT_USAGE, ConfigError
from memoryd.extractors.counters import describe_counts
from memoryd.heartbeat import SECONDS_PER_CALL
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment
from memoryd.jobs.heartbeat import dry_run_heartbeat, run_heartbeat
from memoryd.jobs.lock import single_writer
from memoryd.settings import LoadedConfig, Settings, state_directory
from memoryd.wording import plural


def cmd_heartbeat(
    args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    settings = config.settings
    env = Environment.live(environ)
    for flag, given in (
        ("--online", args.online),
        ("--text", args.text),
        ("--seconds-per-call", args.seconds_per_call is not None),
    ):
        if given and not args.dry_run:
            print(f"memoryd heartbeat: {flag} goes with --dry-run", file=sys.stderr)
            return EXIT_USAGE
    if args.dry_run:
        return _dry_run(args, settings, env, out)
    with single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds):
        problems = store_not_ready(settings)  # 78 with the fix, not a traceback and exit 1
        if problems:
            raise ConfigError(config.path, problems)
        warn_if_root(settings, sys.stderr)
        progress = TerminalProgress.for_stream(sys.stderr)  # a backfill by hand shows progress
        try:
            result = run_heartbeat(settings, env, progress=progress)
        finally:
            if progress is not None:
                progress.close()
    print(
        f"heartbeat {result.outcome}: {describe_counts(result.counters)}; "
        f"{plural(result.chunks_extracted, 'chunk')} extracted, {result.chunks_failed} failed; "
        f"${result.cost_usd:.4f}; commit {result.commit or 'none'}",
        file=out,
    )
    for key, reason in sorted(result.sources_unreadable.items()):
        print(f"source {key} UNREADABLE ({reason}): nothing was read from it", file=out)
    return result.exit_code


def _dry_run(args: argparse.Namespace, settings: Settings, env: Environment, out: TextIO) -> int:
    seconds = args.seconds_per_call
    if seconds is not None and not seconds > 0:
        print("memoryd heartbeat: --seconds-per-call must be above 0", file=sys.stderr)
        return EXIT_USAGE
    report = dry_run_heartbeat(
        settings,
        env,
        online=args.online,
        seconds_per_call=SECONDS_PER_CALL if seconds is None else seconds,
    )
    if args.text:
        from memoryd.cli.bill import print_bill  # noqa: PLC0415 - only the table needs it

        print_bill(report, out)
    else:
        print(json.dumps(report, indent=2, sort_keys=True), file=out)
    return EXIT_OK
