"""The reading commands (docs/cli.md, Reading the memory): `context`, `search`, `mcp`, and the
corrections `forget`
and `supersede`.

Light at import (the parser adds these subcommands before anything heavy is loaded); each
command imports what it runs. `context`, `search` and `mcp` never take the writer's lock nor
write to the store; `forget` and `supersede` take the lock like any writing job. Exit codes:
0 done, 2 for an unknown fact id, 75 when another memoryd holds the lock.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from memoryd.settings import LoadedConfig

SEARCH_KINDS = ("fact", "summary", "note", "skill", "tacit")
CONTEXT_FORMATS = ("plain", "claude-code", "codex", "json")  # memoryd.reading.formats
DEFAULT_AGENT = "cli"
# What a search reads of a long query (memoryd.reading.search.MAX_QUERY_CHARS, MAX_TERMS).
QUERY_CUT = "only its first 1,000 characters and at most 64 distinct words were searched"


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def add_reading_commands(subcommands: argparse._SubParsersAction[Any]) -> None:
    """Add the reading and correcting subcommands to the parser."""
    context = subcommands.add_parser("context", help="the start-of-run memory bundle for an agent")
    context.add_argument("--agent", required=True, metavar="NAME", help="the agent's name")
    context.add_argument("--routine", metavar="R", help="also the routine's skills file")
    context.add_argument(
        "--budget", type=_positive, default=4000, metavar="TOKENS", help="default: 4000"
    )
    context.add_argument(
        "--format",
        choices=CONTEXT_FORMATS,
        default="plain",
        help="plain Markdown (default); what a Claude Code or Codex SessionStart hook prints, "
        "kept under that harness's limit; or JSON with what was left out and queued",
    )
    search = subcommands.add_parser("search", help="full-text search of the store, decay-ranked")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.add_argument("--limit", type=_positive, default=10, metavar="N")
    search.add_argument(
        "--kind", action="append", choices=SEARCH_KINDS, help="only these kinds (repeatable)"
    )
    search.add_argument(
        "--agent", default=DEFAULT_AGENT, metavar="NAME", help="who reads (counted as accesses)"
    )
    mcp = subcommands.add_parser("mcp", help="a stdio MCP server for agents")
    mcp.add_argument(
        "--agent", default="mcp", metavar="NAME", help="the agent reads are counted for"
    )
    forget = subcommands.add_parser("forget", help="retract a fact (it is never deleted)")
    forget.add_argument("fact_id", metavar="FACT-ID")
    forget.add_argument("--reason", metavar="TEXT", default="")
    supersede = subcommands.add_parser("supersede", help="replace a fact by a new one")
    supersede.add_argument("fact_id", metavar="FACT-ID")
    supersede.add_argument("text", metavar="TEXT")


def cmd_context(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.errors import EXIT_OK  # noqa: PLC0415 - see the module docstring
    from memoryd.jobs.environment import Environment  # noqa: PLC0415
    from memoryd.jobs.reading import agent_context  # noqa: PLC0415
    from memoryd.logs import get_logger  # noqa: PLC0415
    from memoryd.reading.formats import render  # noqa: PLC0415

    bundle = agent_context(
        config.settings,
        Environment.live(environ),
        agent=args.agent,
        routine=args.routine,
        budget=args.budget,
        output_format=args.format,
    )
    metadata = {
        "agent": args.agent,
        "budget": args.budget,
        "chars": bundle.chars,
        "cut": bundle.cut,
        "facts": bundle.fact_ids,
        "included": bundle.included,
        "left_out": bundle.left_out,
        "reads": bundle.reads.to_json(),
        "tokens": bundle.tokens,
    }
    out.write(render(args.format, bundle.text, metadata))
    get_logger("memoryd.cli").info(
        "context.served",
        agent=args.agent,
        format=args.format,
        tokens=bundle.tokens,
        chars=bundle.chars,
        sections=len(bundle.included),
        cut=len(bundle.cut),
        left_out=len(bundle.left_out),
        facts=len(bundle.fact_ids),
        reads_queued=bundle.reads.queued,
    )
    return EXIT_OK


def cmd_search(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.errors import EXIT_OK  # noqa: PLC0415
    from memoryd.jobs.environment import Environment  # noqa: PLC0415
    from memoryd.jobs.reading import find  # noqa: PLC0415
    from memoryd.logs import get_logger  # noqa: PLC0415

    found = find(
        config.settings,
        Environment.live(environ),
        args.query,
        agent=args.agent,
        limit=args.limit,
        kinds=tuple(args.kind or ()),
        operator=args.agent == DEFAULT_AGENT,  # no --agent: the operator reads everything
    )
    hits = found.hits
    if args.json:
        # An array, as agents parse it (docs/agents.md); whether the reads were queued is in
        # the `search.served` event (and `reads.not_recorded` when not).
        out.write(json.dumps([hit.to_json() for hit in hits], indent=2, sort_keys=True) + "\n")
    else:
        for hit in hits:
            status = f" ({hit.status})" if hit.status not in (None, "active") else ""
            where = f"{hit.path}:{hit.line}"
            label = hit.id if hit.kind == "fact" else hit.kind
            when = f" {hit.date}" if hit.date else ""
            out.write(
                f"{label}{status} [{hit.tier}]{when} {hit.ref or '-'} {where}\n    {hit.text}\n"
            )
        if not hits:
            out.write("no match\n")
        if found.query_cut:
            out.write(f"(query cut: {QUERY_CUT})\n")
    get_logger("memoryd.cli").info(
        "search.served",
        agent=args.agent,
        hits=len(hits),
        reads_queued=found.reads.queued,
        query_cut=found.query_cut,
    )
    return EXIT_OK


def cmd_mcp(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], _out: TextIO
) -> int:
    from memoryd.cli.mcp_server import serve  # noqa: PLC0415
    from memoryd.errors import EXIT_OK  # noqa: PLC0415

    serve(config, environ, agent=args.agent)
    return EXIT_OK


def cmd_forget(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.jobs.correct import correct  # noqa: PLC0415

    return correct(config, environ, out, fact_id=args.fact_id, reason=args.reason, text=None)


def cmd_supersede(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.jobs.correct import correct  # noqa: PLC0415

    return correct(config, environ, out, fact_id=args.fact_id, reason="", text=args.text)


READING_COMMANDS: dict[
    str, Callable[[argparse.Namespace, LoadedConfig, Mapping[str, str], TextIO], int]
] = {
    "context": cmd_context,
    "search": cmd_search,
    "mcp": cmd_mcp,
    "forget": cmd_forget,
    "supersede": cmd_supersede,
}

__all__ = ["READING_COMMANDS", "add_reading_commands"]
