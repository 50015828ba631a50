"""`memoryd connect RUNTIME` and `memoryd disconnect RUNTIME` (docs/cli.md, docs/agents.md):
write memoryd's hook, MCP server or instructions into an agent runtime's own configuration, or
take them out.

This is the entry point of `memoryd.connect`: it reads the environment (HOME, PATH, the
runtimes' own variables) and the working folder, and hands them down. Exit codes: 0 done (also
when nothing needed changing), 2 for a project folder that does not exist, 78 for a runtime
file that cannot be parsed or edited safely (named, with the parse error, and left untouched).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from memoryd.connect import BACKUP_SUFFIX, Target, apply_edits, notes, plan_edits
from memoryd.errors import EXIT_OK, EXIT_USAGE
from memoryd.logs import get_logger
from memoryd.settings import LoadedConfig

log = get_logger("memoryd.cli")


def cmd_connect(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    return _run(args, config, environ, out, connect=True)


def cmd_disconnect(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    return _run(args, config, environ, out, connect=False)


def _run(
    args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    connect: bool,
) -> int:
    project = Path(args.project or os.getcwd()).absolute()
    if not project.is_dir():
        print(f"memoryd {args.command}: {project} is not a folder", file=sys.stderr)
        return EXIT_USAGE
    agent = args.agent or args.runtime
    known = [entry.name for entry in config.settings.agents]
    if known and agent not in known:
        log.warning("connect.unknown_agent", agent=agent, configured=known)
    target = Target(
        executable=_executable(environ),
        config_path=config.path.absolute(),
        agent=agent,
        scope=args.scope,
        project=project,
        home=Path(environ.get("HOME") or Path.home()),
        environ=environ,
    )
    edits = plan_edits(args.runtime, target, connect=connect)
    backups = [] if args.dry_run else apply_edits(edits)
    remarks = notes(args.runtime, target) if connect and not args.dry_run else []
    if args.json:
        report = {
            "runtime": args.runtime,
            "agent": agent,
            "scope": args.scope,
            "dry_run": args.dry_run,
            "files": [
                {"path": str(edit.path), "action": edit.action, "diff": edit.diff()}
                for edit in edits
            ],
            "backups": [str(path) for path in backups],
            "notes": remarks,
        }
        out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    else:
        for edit in edits:
            if args.dry_run:
                out.write(edit.diff())
            else:
                out.write(f"{edit.action}: {edit.path}\n")
        if backups:
            out.write(f"backups: each changed file's old text is in FILE{BACKUP_SUFFIX}\n")
        for remark in remarks:
            out.write(f"note: {remark}\n")
    changed = sum(edit.changed for edit in edits)
    log.info(
        f"{args.command}.finished",
        runtime=args.runtime,
        agent=agent,
        scope=args.scope,
        dry_run=args.dry_run,
        changed=changed,
    )
    return EXIT_OK


def _executable(environ: Mapping[str, str], argv0: str | None = None) -> str:
    """The `memoryd` the runtimes should run, as an absolute path, so that a hook finds it
    whatever the runtime's own PATH: the command running now (`/opt/memoryd/bin/memoryd
    connect …` run from outside the venv), else the one on PATH, else the bare name."""
    running = Path(sys.argv[0] if argv0 is None else argv0)
    if running.name == "memoryd" and running.is_file():
        return str(running.absolute())
    found = shutil.which("memoryd", path=environ.get("PATH"))
    return str(Path(found).absolute()) if found else "memoryd"
