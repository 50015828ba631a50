"""`memoryd status [--json]` and `memoryd retry` (docs/cli.md): what memoryd is doing and has
done, and the quarantined chunks put back in the queue.

`status` exits 78 while a source has a file this user cannot read (the heartbeat skips it, so
nothing of it is filed): each such source is listed with the count and the fix.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, TextIO

from memoryd.daemon.status import collect_status
from memoryd.daemon.status_text import render_status
from memoryd.errors import EXIT_CONFIG, EXIT_OK, MemorydError
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment, open_state
from memoryd.jobs.lock import single_writer
from memoryd.logs import get_logger
from memoryd.settings import LoadedConfig, state_directory
from memoryd.sources.access import unreadable_sources

# The events of every command are logged under the command line's one logger name.
log = get_logger("memoryd.cli")


def cmd_status(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    report = collect_status(config.settings, Environment.live(environ))
    unreadable = _unreadable_files(config)
    report["unreadable_files"] = unreadable
    store_problems = _store_problems(config, environ)
    report["store_problems"] = store_problems
    if args.json:
        out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    else:
        out.write(render_status(report))
        out.writelines(f"UNREADABLE FILES: {item['fix']}\n" for item in unreadable)
        out.writelines(f"STORE: {line}\n" for line in store_problems)
    # A transcript memoryd cannot read is never filed: the operator must act, as for an
    # unreadable source path; so must they for a store refused or with entries set aside, and
    # for a configuration file the running daemon failed to reload.
    return EXIT_CONFIG if unreadable or store_problems or report["reload_failed"] else EXIT_OK


def _store_problems(config: LoadedConfig, environ: Mapping[str, str]) -> list[str]:
    """What the operator must fix in the store: a repository memoryd refuses (another user's),
    and the hostile entries (links, FIFOs) set aside out of it (`memoryd.worktree`)."""
    from memoryd.gitrepo import ForeignRepositoryError  # noqa: PLC0415
    from memoryd.jobs.parts import git_store  # noqa: PLC0415
    from memoryd.worktree import set_aside_listing  # noqa: PLC0415

    git = git_store(config.settings, Environment.live(environ).clock)
    try:
        entries = set_aside_listing(git)
    except ForeignRepositoryError as error:
        return [str(error)]
    except MemorydError:
        return []  # no store yet: the report says so
    if not entries:
        return []
    _work_tree, git_dir, _prefix = git.locations()
    folder = git_dir / "memoryd" / "set-aside"
    return [
        f"{len(entries)} link(s) or special file(s) planted in the store were set aside "
        f"({', '.join(entries[:5])}) in {folder}; look at them, then remove that folder"
    ]


def _unreadable_files(config: LoadedConfig) -> list[dict[str, Any]]:
    """Per source, the files this user cannot read (the heartbeat skips them with
    `source.skipped`), their modes and owners, and the fix (`memoryd.sources.access`)."""
    return [
        {
            "source": label,
            "files": report.files,
            "unreadable": len(report.unreadable),
            "owners": sorted({f.owner for f in report.unreadable}),
            "groups": sorted({f.group for f in report.unreadable}),
            "modes": sorted({f"{f.mode:04o}" for f in report.unreadable}),
            "fix": line,
        }
        for label, report, line in unreadable_sources(config.settings)
    ]


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
