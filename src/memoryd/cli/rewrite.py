"""`memoryd rewrite [--dry-run]` and `memoryd explain TARGET` (docs/cli.md).

Exit codes of `rewrite`: 0 when its work is done, including when the deterministic template
stood in for an unreachable LLM (the summaries were written, the commit message and
`rewrite.finished` say so, and the next run asks the LLM again), 75 when another memoryd holds
the lock or a pending batch's status could not be fetched, 1 when the LLM refused a request for
good, 78 when the account, key, model or endpoint cannot be used (the template stood in; only the
operator can fix it, as for a configuration error). `explain` exits 2 for a target that names no
entity or fact, or a name several entities answer to (the message lists their refs).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TextIO

from memoryd.errors import EXIT_OK
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment
from memoryd.jobs.lock import single_writer
from memoryd.jobs.rewrite import explain, run_rewrite
from memoryd.settings import LoadedConfig, state_directory


def cmd_rewrite(
    args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    settings = config.settings
    env = Environment.live(environ)
    if args.dry_run:
        report = run_rewrite(settings, env, dry_run=True)
        print(json.dumps(report.plan, indent=2, sort_keys=True), file=out)
        return EXIT_OK
    with single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds):
        report = run_rewrite(settings, env)
    line = f"rewrite {report.outcome}: {report.message().removeprefix('rewrite: ')}"
    if report.batch_submitted:
        line += f"; batch {report.batch_submitted} submitted (a later run applies it)"
    if report.batch_pending:
        line += f"; batch {report.batch_pending} still pending"
    if report.refused:
        line += f"; {report.refused} refused (previous summary kept)"
    print(f"{line}; ${report.cost_usd:.4f}; commit {report.commit or 'none'}", file=out)
    return report.exit_code


def cmd_explain(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    print(explain(config.settings, Environment.live(environ), args.target), end="", file=out)
    return EXIT_OK
