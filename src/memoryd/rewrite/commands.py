"""The `memoryd rewrite [--dry-run]` and `memoryd explain <fact-id|ref>` commands.

Kept here so that `memoryd.cli` only registers them. Exit codes (DESIGN §2): `rewrite` exits 0
when its work is done, including when the deterministic template stood in for an unreachable
LLM (the summaries were written, the commit message and `rewrite.finished` say so, and the next
run asks the LLM again), 75 when another memoryd holds the lock or a pending batch's status could
not be fetched, 1 when the LLM refused the requests for good. `explain` exits 2 for an unknown
fact id or ref.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, TextIO

from memoryd.daemon import hooks
from memoryd.daemon.jobs import LOCK_WAIT_SECONDS, Environment, git_store
from memoryd.daemon.lock import single_writer
from memoryd.errors import EXIT_OK
from memoryd.settings import LoadedConfig, state_directory


def cmd_rewrite(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.rewrite.job import run_rewrite  # noqa: PLC0415 - keeps startup light

    settings = config.settings
    env = Environment.live(environ)
    if args.dry_run:
        report = run_rewrite(settings, env, dry_run=True)
        print(json.dumps(report.plan, indent=2, sort_keys=True), file=out)
        return EXIT_OK
    with single_writer(state_directory(settings, environ), wait_seconds=LOCK_WAIT_SECONDS):
        # As the daemon does around its rewrite job: pull first with `git.push`, then push and
        # run `index.commands` after a commit.
        git = git_store(settings, env.clock)
        hooks.before_writing(settings, git)
        report = run_rewrite(settings, env)
        hooks.after_commit(settings, git, committed=report.commit is not None)
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
    from memoryd.rewrite.job import explain  # noqa: PLC0415 - keeps startup light

    print(explain(config.settings, Environment.live(environ), args.target), end="", file=out)
    return EXIT_OK


def add_explain_parser(commands: argparse._SubParsersAction[Any]) -> None:
    explain = commands.add_parser(
        "explain", help="why a fact is hot, warm or cold, and whether it is in the summary"
    )
    explain.add_argument(
        "target", metavar="FACT-ID|REF", help="e.g. jane-doe-004 or people/jane-doe"
    )
