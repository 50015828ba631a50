"""`memoryd share` (docs/cli.md): run as an agent's user, give the group read access to that
user's transcripts, so that memoryd running as its own system user reads them.

For every configured source it walks what a heartbeat would read and adds group read to each
file the calling user owns (group read and search to the folders below the source's root):
`memoryd.sources.sharing` says exactly what changes and what never does. Files of other users
are left alone, so every agent's user can run it on the same configuration.
`memoryd-share.timer` (systemd/user/) runs it every minute; a run with nothing new costs one
`lstat` per file.

Exit 0, also when there was nothing to do; 1 when a file could not be changed (each is printed).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TextIO

from memoryd.errors import EXIT_FAILED, EXIT_OK
from memoryd.logs import get_logger
from memoryd.settings import LoadedConfig
from memoryd.sources.discovery import source_root
from memoryd.sources.reader import SourceReader
from memoryd.sources.sharing import ShareReport, share_files

# The events of every command are logged under the command line's one logger name.
log = get_logger("memoryd.cli")


def cmd_share(
    _args: argparse.Namespace, config: LoadedConfig, _environ: Mapping[str, str], out: TextIO
) -> int:
    owner = os.geteuid()
    total = ShareReport()
    for agent in config.settings.agents:
        for source in agent.sources:
            reader = SourceReader(agent.name, source)
            found = reader.survey()
            report = share_files(source_root(source.path), found.files, owner=owner)
            total.merge(report)
            print(
                f"{agent.name} {source.format} {source.path}: shared {report.shared}, "
                f"already shared {report.already}, another user's {report.foreign}"
                + (f", failed {len(report.failed)}" if report.failed else ""),
                file=out,
            )
            for path, reason in report.failed:
                print(f"  cannot share {path}: {reason}", file=out)
                log.warning("share.failed", path=path, reason=reason)
    # Run every minute by a timer: silent unless something changed.
    (log.info if total.shared or total.failed else log.debug)(
        "share.finished",
        uid=owner,
        shared=total.shared,
        already=total.already,
        foreign=total.foreign,
        failed=len(total.failed),
    )
    return EXIT_FAILED if total.failed else EXIT_OK
