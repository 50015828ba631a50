"""`memoryd init` (docs/cli.md): make the configured folder a memoryd store, then run
`index.init_commands` once.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from memoryd.errors import EXIT_OK, ConfigError
from memoryd.jobs.hooks import run_init_commands
from memoryd.logs import get_logger
from memoryd.reading.accesses import prepare_state_directory
from memoryd.settings import LoadedConfig, check_environment, state_directory
from memoryd.store.layout import init_store

# The events of every command are logged under the command line's one logger name.
log = get_logger("memoryd.cli")


def cmd_init(
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    report = check_environment(config.settings, environ)
    blocking = [
        p
        for p in report.problems
        if p.startswith(("At 'store.", "At 'state.")) or " is not readable" in p
    ]
    if blocking:
        raise ConfigError(config.path, blocking)
    store = config.settings.store
    result = init_store(
        store.path,
        tacit_file=store.tacit_file,
        skills_dir=store.skills_dir,
        author_name=config.settings.git.author_name,
        author_email=config.settings.git.author_email,
    )
    if result.commit:
        print(f"initialised the store at {store.path} (commit {result.commit[:12]})", file=out)
    else:
        print(f"the store at {store.path} is already initialised; nothing changed", file=out)
    # The state directory and the group's queue folder, so that agents' reads are queued
    # before the daemon has run (operator's guide 2.6).
    prepare_state_directory(state_directory(config.settings, environ))
    log.info("init.finished", store=str(store.path), commit=result.commit)

    ran = run_init_commands(config.settings, store.path, state_directory(config.settings, environ))
    if ran is not None:
        count = len(config.settings.index.init_commands)
        print(f"index.init_commands: {ran} of {count} succeeded", file=out)
    return EXIT_OK
