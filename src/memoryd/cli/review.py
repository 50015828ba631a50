"""`memoryd review [accept|reject ID] [--json]`: the tips the safety gate held (docs/cli.md, Reading
the memory).

Without an action, list the held items (id, kind, agent, reasons, text and where each came
from) and say how many were decided before; exit 0. `accept ID` files the tip and `reject ID`
records that it never will be, each in its own commit (see `memoryd.jobs.review`); they take
the single-writer lock like `retry` (exit 75 if a job holds it past the wait). An unknown or
already decided id exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from memoryd.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment
from memoryd.jobs.lock import single_writer
from memoryd.jobs.review import decide_item, review_items
from memoryd.settings import LoadedConfig, state_directory

if TYPE_CHECKING:
    from memoryd.store.review import ReviewItem


def cmd_review(
    args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    env = Environment.live(environ)
    settings = config.settings
    if args.action is None:
        items = review_items(settings, env)
        if args.json:
            document = [item.to_json() for item in items]
            out.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        else:
            out.write(render_items(items))
        return EXIT_OK
    if not args.id:
        print(f"memoryd review: {args.action} needs the id of a held item", file=sys.stderr)
        return EXIT_USAGE
    with single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds):
        item, commit, problem = decide_item(settings, env, args.id, args.action)
    out.write(f"{item.id} {item.status}" + (f" (commit {commit[:12]})" if commit else "") + "\n")
    if problem is not None:
        out.write(f"memoryd: {problem}\n")
        return EXIT_FAILED
    return EXIT_OK


def render_items(items: list[ReviewItem]) -> str:
    held = [item for item in items if item.status == "held"]
    decided = len(items) - len(held)
    lines = [f"{len(held)} held for review, {decided} decided before"]
    for item in held:
        where = f"{item.kind} of {item.agent}" + (f", topic {item.topic}" if item.topic else "")
        lines.append("")
        lines.append(f"{item.id}  {where}  (held {item.held})")
        lines.append(f"  reasons: {', '.join(sorted(item.reasons))}")
        lines.append(f"  text:    {item.text}")
        for source in item.sources:
            lines.append(
                f"  from:    {source.agent} session {source.session}, {source.file} "
                f"lines {source.lines[0]}-{source.lines[1]}, {source.trust} text, {source.day}"
            )
    if held:
        lines.append("")
        lines.append("memoryd review accept ID files a tip; memoryd review reject ID drops it")
    return "\n".join(lines) + "\n"
