"""`memoryd reprocess [--agent NAME] [--source PATH] [--since DATE] [--until DATE] [--dry-run]`
(docs/cli.md): have the following heartbeats read chosen history again.

Without `--dry-run`, the request is recorded in the store in a commit of its own, under the
single-writer lock (exit 75 if a job holds it past the wait), and its id printed; the heartbeats
that follow do the reading (`memoryd.jobs.reprocess`). With `--dry-run`, the whole re-read is
priced now and printed as JSON; nothing is recorded. An unknown agent or source, a date that is
not YYYY-MM-DD, or `--until` before `--since` exits 2 with a message saying what is wrong.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from memoryd.errors import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from memoryd.settings import LoadedConfig

# `memoryd.cli` builds this command's parser entry on every start: the jobs it runs are imported
# only when it runs (hence the PLC0415 imports in `cmd_reprocess`).


def add_reprocess_command(subcommands: argparse._SubParsersAction[Any]) -> None:
    """The parser entry of `memoryd reprocess` (dates are checked by the command, which logs)."""
    command = subcommands.add_parser(
        "reprocess", help="have the next heartbeats read chosen history again"
    )
    command.add_argument("--agent", metavar="NAME", help="only this agent's history")
    command.add_argument("--source", metavar="PATH", help="only this source (as configured)")
    command.add_argument("--since", metavar="DATE", help="from this day on (YYYY-MM-DD)")
    command.add_argument("--until", metavar="DATE", help="up to this day, included")
    command.add_argument(
        "--dry-run", action="store_true", help="price the whole re-read, record nothing"
    )


def cmd_reprocess(
    args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float | None = None,
) -> int:
    from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment  # noqa: PLC0415
    from memoryd.jobs.lock import single_writer  # noqa: PLC0415
    from memoryd.jobs.reprocess import (  # noqa: PLC0415
        new_request,
        price_reprocess,
        record_request,
        selection_from,
    )
    from memoryd.settings import state_directory  # noqa: PLC0415

    wait = LOCK_WAIT_SECONDS if lock_wait_seconds is None else lock_wait_seconds
    settings = config.settings
    selection = selection_from(
        settings, agent=args.agent, source=args.source, since=args.since, until=args.until
    )
    env = Environment.live(environ)
    request_id = uuid.uuid4().hex[:12]
    if args.dry_run:
        report = price_reprocess(settings, env, selection, request_id)
        out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
        return EXIT_OK
    request = new_request(settings, env, selection, request_id)
    with single_writer(state_directory(settings, environ), wait_seconds=wait):
        commit, problem = record_request(settings, env, request, run_id=uuid.uuid4().hex[:16])
    out.write(
        f"reprocess {request.id} recorded (commit {(commit or 'none')[:12]}): "
        "the next heartbeats read it again\n"
    )
    if problem is not None:
        out.write(f"memoryd: {problem}\n")
        return EXIT_FAILED
    return EXIT_OK
