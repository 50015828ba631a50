"""The `memoryd` command line (DESIGN §2): parse, configure logging, run one command, exit.

This is an entry point: it is where the environment, the clock and the configuration file are
read and handed down. Exit codes: 0 done, 1 failed, 2 usage, 75 stopped early for a transient
reason, 78 configuration error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn, TextIO

from memoryd import __version__
from memoryd.daemon.commands import cmd_retry, cmd_run, cmd_status
from memoryd.daemon.jobs import (
    LOCK_WAIT_SECONDS,
    Environment,
    dry_run_heartbeat,
    run_heartbeat,
)
from memoryd.daemon.lock import single_writer
from memoryd.daemon.progress import TerminalProgress
from memoryd.errors import EXIT_CONFIG, EXIT_OK, EXIT_USAGE, ConfigError, MemorydError
from memoryd.logs import LEVELS, configure_logging, get_logger
from memoryd.rewrite.commands import add_explain_parser, cmd_explain, cmd_rewrite
from memoryd.settings import (
    CheckReport,
    LoadedConfig,
    check_environment,
    load_settings,
    resolve_config_path,
    state_directory,
)

log = get_logger("memoryd.cli")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit 2 with the message on stderr."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memoryd",
        description="Give AI agents a long-term memory: read their transcripts, extract what is "
        "worth keeping, and file it into a git-backed store.",
    )
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    parser.add_argument("--config", metavar="PATH", help="configuration file (TOML)")
    parser.add_argument(
        "--log-format",
        choices=("auto", "json", "console"),
        default="auto",
        help="auto: console on a terminal, JSON lines otherwise",
    )
    parser.add_argument("--log-level", choices=LEVELS, default="info", type=str.lower)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands.add_parser("init", help="create the store skeleton (git init if needed)")
    commands.add_parser("check", help="validate the configuration and environment")
    heartbeat = commands.add_parser("heartbeat", help="one heartbeat now, then exit")
    heartbeat.add_argument("--dry-run", action="store_true", help="report, change nothing")
    rewrite = commands.add_parser("rewrite", help="the weekly rewrite now, then exit")
    rewrite.add_argument("--dry-run", action="store_true", help="report, change nothing")
    commands.add_parser("run", help="the daemon: scheduler in the foreground")
    status = commands.add_parser("status", help="last runs, cursors, quarantine, spend")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    commands.add_parser("retry", help="put quarantined chunks back in the queue")
    add_explain_parser(commands)
    return parser


Command = Callable[[argparse.Namespace, LoadedConfig, Mapping[str, str], TextIO], int]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_format, args.log_level)
    environ = dict(os.environ)
    try:
        config = load_settings(resolve_config_path(args.config, environ))
        return COMMANDS[args.command](args, config, environ, sys.stdout)
    except ConfigError as error:
        print(str(error), file=sys.stderr)
        log.error("config.invalid", path=error.path, problems=error.problems)
        return EXIT_CONFIG
    except MemorydError as error:
        log.error("command.failed", command=args.command, error=str(error))
        print(f"memoryd {args.command}: {error}", file=sys.stderr)
        return error.exit_code


def _print_report(report: CheckReport, config: LoadedConfig, out: TextIO) -> None:
    for problem in report.problems:
        print(f"error: {problem}", file=out)
    for warning in report.warnings:
        print(f"warning: {warning}", file=out)
    if report.ok:
        print(f"{config.path}: configuration OK", file=out)
    else:
        print(f"{config.path}: {len(report.problems)} problem(s)", file=out)


def cmd_check(
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    report = check_environment(config.settings, environ)
    report.problems.extend(_store_problems(config))
    report.problems.extend(_prompt_problems())
    _print_report(report, config, out)
    log.info(
        "check.finished",
        path=str(config.path),
        problems=len(report.problems),
        warnings=len(report.warnings),
    )
    return EXIT_OK if report.ok else EXIT_CONFIG


def _prompt_problems() -> list[str]:
    """Every packaged prompt must load (a missing or malformed one is a packaging mistake)."""
    from memoryd.prompts import PromptError, check_prompts  # noqa: PLC0415 - keeps startup light

    try:
        check_prompts()
    except PromptError as error:
        return [f"prompts: {error}"]
    return []


def _store_problems(config: LoadedConfig) -> list[str]:
    """Problems with an existing store (a format newer than this memoryd reads)."""
    from memoryd.errors import StoreFormatError  # noqa: PLC0415 - keeps startup light
    from memoryd.store.layout import check_format, read_format  # noqa: PLC0415

    store = config.settings.store.path
    if not store.is_dir():
        return []
    try:
        version = read_format(store)
        if version is not None:
            check_format(store, version)
    except StoreFormatError as error:
        return [f"At 'store.path': {error}"]
    return []


def cmd_init(
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.store.layout import init_store  # noqa: PLC0415 - keeps startup light

    report = check_environment(config.settings, environ)
    blocking = [p for p in report.problems if p.startswith(("At 'store.", "At 'state."))]
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
    log.info("init.finished", store=str(store.path), commit=result.commit)
    return EXIT_OK


def cmd_heartbeat(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    settings = config.settings
    env = Environment.live(environ)
    if args.dry_run:
        report = dry_run_heartbeat(settings, env)
        print(json.dumps(report, indent=2, sort_keys=True), file=out)
        return EXIT_OK
    progress = TerminalProgress.for_stream(sys.stderr)  # a backfill by hand shows progress
    with single_writer(state_directory(settings, environ), wait_seconds=LOCK_WAIT_SECONDS):
        try:
            result = run_heartbeat(settings, env, progress=progress)
        finally:
            if progress is not None:
                progress.close()
    counters = result.counters
    print(
        f"heartbeat {result.outcome}: +{counters.facts_added} facts, "
        f"{counters.facts_superseded} superseded, {counters.entities_created} entities, "
        f"{counters.skills_added} skills, {counters.notes_added} notes; "
        f"{result.chunks_extracted} chunks extracted, {result.chunks_failed} failed; "
        f"${result.cost_usd:.4f}; commit {result.commit or 'none'}",
        file=out,
    )
    return result.exit_code


def _not_yet(
    args: argparse.Namespace, _config: LoadedConfig, _environ: Mapping[str, str], _out: TextIO
) -> int:
    print(f"memoryd {args.command}: not available in this version yet", file=sys.stderr)
    return EXIT_USAGE


COMMANDS: dict[str, Command] = {
    "check": cmd_check,
    "init": cmd_init,
    "heartbeat": cmd_heartbeat,
    "rewrite": cmd_rewrite,
    "explain": cmd_explain,
    "run": cmd_run,
    "status": cmd_status,
    "retry": cmd_retry,
}
