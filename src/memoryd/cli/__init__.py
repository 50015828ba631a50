"""The `memoryd` command line (docs/cli.md): parse, configure
logging, run one command, exit.

This is an entry point: it is where the environment, the clock and the configuration file are
read and handed down. The commands are found by name in `memoryd.cli.commands`, imported once
the arguments are parsed (so `--version` and `--help` import nothing else), and each command
group's module is imported only when one of its commands runs, so `memoryd status` starts light
too. Exit
codes: 0 done, 1 failed, 2 usage, 75 stopped early for a transient reason, 78 configuration
error (the LLM's account, key, model or endpoint included).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from memoryd import LOG_LEVELS, __version__
from memoryd.cli.reading import add_reading_commands
from memoryd.cli.reprocess import add_reprocess_command
from memoryd.cli.startup import (
    collector_paused,
    first_command_done,
    no_collection_at_exit,
    without_pydantic_plugins,
)
from memoryd.errors import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_TEMPFAIL,
    EXIT_USAGE,
    ConfigError,
    MemorydError,
)


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
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info", type=str.lower)
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    subcommands.add_parser("init", help="create the store skeleton (git init if needed)")
    check = subcommands.add_parser("check", help="validate the configuration and environment")
    check.add_argument(
        "--online",
        action="store_true",
        help="also prove the API key, endpoint and model(s) with a tiny real extraction each",
    )
    check.add_argument(
        "--service-user",
        metavar="USER",
        help="as root, before set-up: can USER run this memoryd? (no configuration is read)",
    )
    heartbeat = subcommands.add_parser("heartbeat", help="one heartbeat now, then exit")
    heartbeat.add_argument("--dry-run", action="store_true", help="report, change nothing")
    heartbeat.add_argument(
        "--online",
        action="store_true",
        help="with --dry-run: the endpoint counts the tokens of the requests it would send",
    )
    heartbeat.add_argument(
        "--text", action="store_true", help="with --dry-run: the whole bill as a table, not JSON"
    )
    heartbeat.add_argument(
        "--seconds-per-call",
        type=float,
        default=None,
        metavar="S",
        help="with --dry-run: seconds one model call is assumed to take (default 8)",
    )
    rewrite = subcommands.add_parser("rewrite", help="the weekly rewrite now, then exit")
    rewrite.add_argument("--dry-run", action="store_true", help="report, change nothing")
    subcommands.add_parser("run", help="the daemon: scheduler in the foreground")
    status = subcommands.add_parser("status", help="last runs, cursors, quarantine, spend")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    subcommands.add_parser("retry", help="put quarantined chunks back in the queue")
    explain = subcommands.add_parser(
        "explain", help="why a fact is hot, warm or cold, and whether it is in the summary"
    )
    explain.add_argument(
        "target",
        metavar="TARGET",
        help="a fact id, ref, slug, name or alias: jane-doe-004, people/jane-doe, jane-doe, "
        '"Jane Doe"',
    )
    review = subcommands.add_parser("review", help="tips held by the safety gate")
    review.add_argument("action", nargs="?", choices=("accept", "reject"), help="decide an item")
    review.add_argument("id", nargs="?", metavar="ID", help="the item's id, e.g. r-1a2b3c4d5e")
    review.add_argument("--json", action="store_true", help="machine-readable list")
    add_reading_commands(subcommands)
    add_reprocess_command(subcommands)
    subcommands.add_parser(
        "share", help="as an agent's user: let your transcripts' group (memoryd) read them"
    )
    _add_connect_commands(subcommands)
    _add_eval_command(subcommands)
    return parser


# The runtimes `memoryd connect` knows (memoryd.connect.RUNTIMES, not imported here: too heavy
# for the parser).
CONNECT_RUNTIMES = ("claude-code", "codex", "openclaw", "paperclip")


def _add_connect_commands(subcommands: argparse._SubParsersAction[Any]) -> None:
    for name, help_text in (
        ("connect", "write memoryd into an agent runtime's own configuration"),
        ("disconnect", "remove what `memoryd connect` wrote"),
    ):
        command = subcommands.add_parser(name, help=help_text)
        command.add_argument("runtime", choices=CONNECT_RUNTIMES, metavar="RUNTIME")
        command.add_argument(
            "--agent", metavar="NAME", help="memoryd's name for the agent (default: RUNTIME)"
        )
        command.add_argument("--scope", choices=("user", "project"), default="user")
        command.add_argument(
            "--project", metavar="DIR", help="the project folder (default: the current one)"
        )
        command.add_argument(
            "--dry-run", action="store_true", help="print each file's diff, change nothing"
        )
        command.add_argument("--json", action="store_true", help="machine-readable report")


def _add_eval_command(subcommands: argparse._SubParsersAction[Any]) -> None:
    """`memoryd eval` (its code in `memoryd.cli.eval`, imported only when it runs)."""
    command = subcommands.add_parser(
        "eval", help="score memory quality on a labelled scenario set (a throw-away store)"
    )
    command.add_argument("--set", metavar="PATH", help="a labelled set (default: memoryd's own)")
    command.add_argument(
        "--retrieval", action="store_true", help="also ask the set's questions of the search"
    )
    command.add_argument("--json", action="store_true", help="machine-readable scorecard")
    command.add_argument(
        "--min-score", type=float, metavar="X", help="exit 1 when the mean score is below X"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    no_collection_at_exit()
    try:
        return _run(argv)
    finally:
        first_command_done()


def _run(argv: Sequence[str] | None) -> int:
    without_pydantic_plugins()
    with collector_paused():
        args = build_parser().parse_args(argv)
        from memoryd.cli import commands  # noqa: PLC0415 - see the module docstring
        from memoryd.logs import configure_logging, get_logger  # noqa: PLC0415
        from memoryd.settings import load_settings, resolve_config_path  # noqa: PLC0415

        configure_logging(args.log_format, args.log_level)
    log = get_logger("memoryd.cli")
    environ = dict(os.environ)
    try:
        if args.command == "check" and args.service_user is not None:
            from memoryd.cli.service_user import cmd_check_service_user  # noqa: PLC0415

            return cmd_check_service_user(args.service_user, sys.stdout)
        with collector_paused():  # the command's modules: still start-up
            checking = environ if args.command == "check" else None
            config = load_settings(resolve_config_path(args.config, environ), checking)
            command = commands.load_command(args.command)
        return command(args, config, environ, sys.stdout)
    except ConfigError as error:
        print(str(error), file=sys.stderr)
        log.error("config.invalid", path=error.path, problems=error.problems)
        return EXIT_CONFIG
    except MemorydError as error:
        log.error("command.failed", command=args.command, error=str(error))
        print(f"memoryd {args.command}: {error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:
        # Disk full, a read-only store, a folder taken away: a JSON event and a clean exit code,
        # never a bare traceback. Nothing stored is lost: every job commits or not.
        code = _os_error_exit_code(error)
        log.error(
            "command.failed",
            command=args.command,
            error=str(error),
            errno=errno.errorcode.get(error.errno or 0),
            path=error.filename,
        )
        print(f"memoryd {args.command}: {error}", file=sys.stderr)
        return code


def _os_error_exit_code(error: OSError) -> int:
    """75 when waiting may fix it (disk or quota full), 78 when the operator must (permissions,
    a read-only file system), 1 otherwise."""
    if error.errno in {errno.ENOSPC, errno.EDQUOT}:
        return EXIT_TEMPFAIL
    if error.errno in {errno.EROFS, errno.EACCES, errno.EPERM}:
        return EXIT_CONFIG
    return EXIT_FAILED
