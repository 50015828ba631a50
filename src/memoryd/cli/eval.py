"""`memoryd eval [--set PATH] [--retrieval] [--json] [--min-score X]` (docs/eval.md): a labelled
scenario set run through the configured model into a throw-away store, and a scorecard.

Exit codes: 0 when it ran (the scores are information), 1 with `--min-score` when the mean score
is below it, 2 for a set that cannot be used, 78 for an endpoint or configuration that cannot be
used (the scorecard is not printed: it would score an empty store).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from memoryd.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_OK
from memoryd.eval.labels import default_set, load_labels
from memoryd.eval.retrieval import score_retrieval
from memoryd.eval.run import filed_set
from memoryd.eval.score import Scorecard, score_store
from memoryd.eval.store_view import read_store
from memoryd.jobs.environment import Environment
from memoryd.settings import LoadedConfig


def mean_score(card: Scorecard) -> float:
    scores = [c.score for c in card.values() if c.score is not None]
    return sum(scores) / len(scores) if scores else 1.0


def cmd_eval(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    labels = load_labels(Path(args.set).resolve() if args.set else default_set())
    env = Environment.live(environ)
    with filed_set(config.settings, env, labels) as run:
        if run.exit_code == EXIT_CONFIG:
            print(
                f"memoryd eval: the model could not be used (heartbeat {run.heartbeat_outcome}); "
                "run `memoryd check --online`",
                file=sys.stderr,
            )
            return EXIT_CONFIG
        store = run.settings.store
        card = score_store(
            read_store(store.path, tacit_file=store.tacit_file, skills_dir=store.skills_dir),
            labels,
        )
        if args.retrieval:
            card["retrieval"] = score_retrieval(run.settings, run.env, labels)
        outcomes = {"heartbeat": run.heartbeat_outcome, "rewrite": run.rewrite_outcome}
    mean = mean_score(card)
    if args.json:
        document = {
            "set": str(labels.folder),
            "model": config.settings.llm.model,
            "jobs": outcomes,
            "mean": round(mean, 3),
            "categories": {name: category.to_json() for name, category in card.items()},
        }
        print(json.dumps(document, indent=2, sort_keys=True), file=out)
    else:
        _print_card(card, mean, out)
    if args.min_score is not None and mean < args.min_score:
        return EXIT_FAILED
    return EXIT_OK


def _print_card(card: Scorecard, mean: float, out: TextIO) -> None:
    for name, category in card.items():
        score = "n/a" if category.score is None else f"{category.score:.0%}"
        extra = " ".join(f"{k}={v}" for k, v in category.extra.items())
        print(
            f"{name:<20} {score:>5}  {category.passed}/{category.total}  {extra}".rstrip(), file=out
        )
        for problem in category.problems:
            print(f"    - {problem}", file=out)
    print(f"{'mean':<20} {mean:.0%}", file=out)
