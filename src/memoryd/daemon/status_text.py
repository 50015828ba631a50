"""`memoryd status` for people (`render_status`): the report `memoryd.daemon.status` gathers,
one fact per line. Only reads the report; the JSON (`status --json`) is the report itself.
"""

from __future__ import annotations

from typing import Any

from memoryd.daemon.reprocess_status import reprocess_lines
from memoryd.extractors.counters import describe_counts
from memoryd.extractors.dropped_lines import SHOWN_DAYS
from memoryd.jobs.sync_health import sync_lines
from memoryd.wording import plural

# Skipped files listed one per line in the text status; the JSON has them all.
_SKIPPED_SHOWN = 5


def render_status(report: dict[str, Any]) -> str:
    """The report for people, one fact per line."""
    lines = [f"memoryd status at {report['now']}", f"store: {report['store']}"]
    if report["lock_holder_pid"]:
        lines.append(f"running now: pid {report['lock_holder_pid']} holds the lock")
    last = report["last_heartbeat"]
    if last is None:
        lines.append("last heartbeat: none yet")
    else:
        counters = last["counters"]
        lines.append(
            f"last heartbeat: {last['started_at']} {last['outcome']}, commit "
            f"{(last['commit'] or 'none')[:12]}, {describe_counts(counters)}, "
            f"${float(counters.get('cost_usd') or 0):.4f}"
            + (f", stopped early: {counters['stop_reason']}" if counters.get("stop_reason") else "")
        )
    lines.extend(_unusable_lines(report["llm_unusable"]))
    lines.extend(_reload_lines(report.get("reload_failed")))
    lines.extend(sync_lines(report.get("sync")))
    if report.get("repository_problem"):
        lines.append(f"REPOSITORY: {report['repository_problem']}")
    for run in report["unfinished_runs"]:
        lines.append(f"unfinished: {run['job']} {run['run_id']} since {run['started_at']}")
    nxt = report["next_runs"]
    heartbeat = nxt["heartbeat"] or "when the daemon starts"
    lines.append(f"next heartbeat: {heartbeat}{' (overdue)' if nxt['heartbeat_overdue'] else ''}")
    rewrite = nxt["rewrite"]
    if nxt["rewrite_catch_up_at_start"]:
        rewrite += " (also right after the daemon starts: the last one is over a week old)"
    lines.append(f"next rewrite: {rewrite}")
    for source in report["sources"]:
        if source.get("unreadable"):
            lines.append(
                f"source {source['agent']} {source['source']}: UNREADABLE "
                f"({source['unreadable']}); nothing is read from it until that is fixed"
            )
            continue
        lines.append(
            f"source {source['agent']} {source['source']}: {plural(source['files'], 'file')}, "
            f"{plural(source['lag_bytes'], 'byte')} not read yet"
            + (
                f" ({plural(source['filed_ahead_bytes'], 'byte')} after a held-back chunk "
                "filed already)"
                if source.get("filed_ahead_bytes")
                else ""
            )
        )
        skipped = list(source.get("skipped", ()))
        lines.extend(
            f"  skipped {item['path']}: {item['reason']}" for item in skipped[:_SKIPPED_SHOWN]
        )
        if len(skipped) > _SKIPPED_SHOWN:
            lines.append(
                f"  ... and {len(skipped) - _SKIPPED_SHOWN} more skipped (`memoryd status --json`)"
            )
    spend = report["spend_today"]
    budget = f"${spend['budget_usd']:.2f}" if spend["budget_usd"] else "no ceiling"
    lines.append(
        f"spend today ({spend['day']} UTC): ${spend['usd']:.4f} of {budget}, "
        f"{plural(spend['calls'], 'call')}{' - budget exhausted' if spend['exhausted'] else ''}"
    )
    lines.append(
        f"quarantined chunks: {len(report['quarantined'])} "
        f"(run `memoryd retry` to requeue); failing: {report['failing_chunks']}"
    )
    for item in report["quarantined"]:
        lines.append(f"  {item['chunk_key']}: {item['last_error']}")
    lines.extend(_dropped_lines(report.get("dropped_lines") or []))
    lines.append(f"pending entities: {len(report['pending_entities'])}")
    for entity in report["pending_entities"]:
        lines.append(f"  {entity['kind']} {entity['name']}: {plural(entity['facts'], 'fact')}")
    # Worded as the heartbeat's commit and `memoryd review` word it: "5 held for review".
    lines.append(f"{report['review_held']} held for review (run `memoryd review`)")
    lines += reprocess_lines(report.get("reprocess", []))
    rewrite_info = report["last_rewrite"]
    lines.append(f"last rewrite: {rewrite_info['succeeded_at'] or 'never'}")
    reading = report["reading"]
    lines.append(f"reads by agents waiting for the next heartbeat: {reading['reads_queued']}")
    if reading["index_failures"]:
        paused = reading["index_paused_until"]
        lines.append(
            f"INDEX COMMANDS FAILING: {reading['index_failures']} runs in a row (see index.failed "
            f"in the log){f'; paused until {paused}' if paused else ''}"
        )
    return "\n".join(lines) + "\n"


def _dropped_lines(dropped: list[dict[str, Any]]) -> list[str]:
    """Over-long lines skipped unread lately: text of a conversation that is never filed."""
    return [
        f"DROPPED: {plural(item['lines'], 'over-long line')} of {item['path']} "
        f"(agent {item['agent']}) skipped unread at {item['at']}; its text is never filed "
        f"(shown for {SHOWN_DAYS} days)"
        for item in dropped
    ]


def _reload_lines(failed: dict[str, Any] | None) -> list[str]:
    if not failed:
        return []
    return [
        f"RELOAD FAILED at {failed['at']}: {failed['path']} is invalid; the daemon runs on the "
        "old configuration until a reload succeeds (`systemctl reload memoryd`)",
        *(f"  {problem}" for problem in failed["problems"] or ()),
    ]


def _unusable_lines(problem: dict[str, Any] | None) -> list[str]:
    """What the operator must fix before the LLM can be used again, and what the server said."""
    if problem is None:
        return []
    said = " ".join(
        str(part)
        for part in (
            f"HTTP {problem['status']}" if problem.get("status") else None,
            problem.get("error_type"),
        )
        if part
    )
    message = problem.get("message") or ""
    return [
        f"LLM UNUSABLE since {problem.get('since')} ({problem.get('kind')}): "
        f"{problem.get('remedy')}",
        f"  endpoint {problem.get('endpoint') or 'unknown'}, model {problem.get('model')}"
        + (f": {said}" if said else "")
        + (f": {message}" if message else "")
        + f" (last seen {problem.get('last_seen')})",
    ]
