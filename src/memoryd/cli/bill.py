"""`memoryd heartbeat --dry-run --text`: the dry run's whole bill as a table for a person.

It renders the JSON report (`memoryd.jobs.heartbeat.dry_run_heartbeat`, its `backlog` from
`memoryd.heartbeat.dryrun`) and nothing else: every figure printed is one the JSON has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

COLUMNS = ("chunks", "chunks_to_send", "input_tokens", "output_tokens", "cost_usd")
HEADERS = ("chunks", "to send", "input tok", "output tok", "cost")


def print_bill(report: Mapping[str, Any], out: TextIO) -> None:
    """Print the whole bill, its rows per agent and per source, and the next heartbeat."""
    backlog: Mapping[str, Any] = report["backlog"]
    for line in _summary(backlog, str(report.get("provider", ""))):
        print(line, file=out)
    if backlog["partial"]:
        print("AN ESTIMATE OF PART of the backlog:", file=out)
        for reason in backlog["partial_reasons"]:
            print(f"  - {reason}", file=out)
    print(file=out)
    rows = [(f"agent {name}", row) for name, row in backlog["by_agent"].items()]
    rows += [(f"source {key}", row) for key, row in backlog["by_source"].items()]
    rows.append(("total", backlog))
    _table(rows, out)
    print(file=out)
    print(
        f"The next heartbeat alone: {report['chunks_to_send']} chunks to send in "
        f"{report['estimated_calls']} calls, {_money(report['estimated_cost_usd'])}.",
        file=out,
    )


def _summary(backlog: Mapping[str, Any], provider: str) -> list[str]:
    heartbeats = backlog["heartbeats"]
    limits = ", ".join(backlog["heartbeats_limited_by"]) or "nothing: one read share holds it"
    share_mib = backlog["read_share_bytes"] / (1024 * 1024)
    lines = [
        f"The whole backlog: {backlog['chunks']} chunks ({backlog['chunks_to_send']} to send) in "
        f"{backlog['calls']} calls over {heartbeats} heartbeat{'s' if heartbeats != 1 else ''} "
        f"(set by: {limits}; read share {share_mib:g} MiB a source).",
    ]
    if provider == "markers":
        lines.append("Provider markers: no model is asked, nothing is billed (cost $0.00).")
        return lines
    price = backlog["price_usd_per_mtok"]
    priced = (
        f"at ${price['input']:g} in / ${price['output']:g} out per million tokens"
        if price is not None
        else "which has no price"
    )
    lines += [
        f"Model {backlog['model']} {priced}: cost {_money(backlog['cost_usd'])}.",
        f"Input {backlog['input_tokens']:,} tokens (the chunks, plus "
        f"{backlog['input_tokens_per_call_besides_chunks']:,} a call for prompt and context); "
        f"output {backlog['output_tokens']:,} tokens ({backlog['output_tokens_per_call']:,} a "
        f"call: {backlog['output_tokens_basis']}).",
        f"Time: about {_duration(backlog['estimated_seconds'])} at concurrency "
        f"{backlog['concurrency']}, assuming {backlog['seconds_per_call']:g} s a call.",
    ]
    if backlog["days"] is not None:
        lines.append(f"Days at the daily ceiling of ${backlog['daily_usd']:g}: {backlog['days']}.")
    largest = backlog["largest_chunk"]
    if largest is not None:
        lines.append(
            f"Largest chunk: {largest['tokens']:,} tokens ({largest['agent']}, session "
            f"{largest['session_id']}, {largest['day']})."
        )
    return lines


def _table(rows: list[tuple[str, Mapping[str, Any]]], out: TextIO) -> None:
    cells = [[name, *(_cell(column, row[column]) for column in COLUMNS)] for name, row in rows]
    header = ["", *HEADERS]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    for line in [header, *cells]:
        first = line[0].ljust(widths[0])
        pairs = zip(line[1:], widths[1:], strict=True)
        rest = "  ".join(cell.rjust(width) for cell, width in pairs)
        print(f"{first}  {rest}".rstrip(), file=out)


def _cell(column: str, value: Any) -> str:
    if column == "cost_usd":
        return _money(value)
    return f"{value:,}"


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.4f}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
