"""Run a scenario set through the configured model into a throw-away store and state.

The operator's store and state are never touched: the set is filed into a fresh store and state
database under a temporary folder, with the operator's `[llm]` table as it is (endpoint, model,
key, concurrency, timeout) and everything else fixed for a repeatable run: the whole history read
(`backfill.since = "all"`), each conversation asked in a call of its own (`sections_per_call`
1: the requests stay those a recording answers, whatever the set's agents interleave), no
spending ceiling, no push, no index commands. The jobs are the
real ones (`run_heartbeat`, then `run_rewrite` for the summaries) and run on the set's own clock:
"today" is the set's `today` (the day after its last conversation by default), so that the
decay tiers, and hence the summaries, are what they would be the day after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from tempfile import TemporaryDirectory

from memoryd.errors import EXIT_CONFIG, EXIT_OK
from memoryd.eval.labels import Labels
from memoryd.jobs.environment import Environment
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.jobs.rewrite import run_rewrite
from memoryd.logs import get_logger
from memoryd.settings import (
    AgentSettings,
    BackfillSettings,
    BudgetSettings,
    Settings,
    SourceSettings,
    StateSettings,
    StoreSettings,
)
from memoryd.store.layout import init_store

log = get_logger("memoryd.eval")


@dataclass(frozen=True)
class EvalRun:
    """Where the set was filed and what the jobs said. `exit_code` is 78 when the model could
    not be used (the scorecard then means nothing), 0 otherwise."""

    settings: Settings
    env: Environment
    heartbeat_outcome: str
    rewrite_outcome: str
    exit_code: int


def eval_settings(operator: Settings, labels: Labels, root: Path) -> Settings:
    """The operator's `[llm]`, decay, entity and cleaning rules; the set's agents; a fresh store
    and state under `root`."""
    agents = [
        AgentSettings(name=a.name, sources=[SourceSettings(format=a.format, path=str(a.path))])
        for a in labels.agents
    ]
    return Settings(
        store=StoreSettings(path=root / "store"),
        state=StateSettings(path=root / "state", host="eval"),
        llm=operator.llm.model_copy(update={"sections_per_call": 1}),
        budget=BudgetSettings(daily_usd=0),
        backfill=BackfillSettings(since="all"),
        schedule=operator.schedule,
        entities=operator.entities,
        decay=operator.decay,
        cleaning=operator.cleaning,
        agents=agents,
    )


@contextmanager
def filed_set(operator: Settings, env: Environment, labels: Labels) -> Iterator[EvalRun]:
    """File the set into a temporary store (removed on exit) and yield the run."""
    with TemporaryDirectory(prefix="memoryd-eval-") as folder:
        root = Path(folder)
        settings = eval_settings(operator, labels, root)
        init_store(
            settings.store.path,
            tacit_file=settings.store.tacit_file,
            skills_dir=settings.store.skills_dir,
            author_name="memoryd eval",
            author_email="eval@localhost",
        )
        clock = env.clock if labels.today is None else _clock_at(labels.today)
        set_env = replace(env, clock=clock, long_lived=False)
        log.info("eval.started", set=str(labels.folder), model=settings.llm.model)
        heartbeat = run_heartbeat(settings, set_env)
        if heartbeat.exit_code == EXIT_CONFIG:
            yield EvalRun(settings, set_env, heartbeat.outcome, "not run", EXIT_CONFIG)
            return
        rewrite = run_rewrite(settings, set_env)
        code = EXIT_CONFIG if EXIT_CONFIG in {heartbeat.exit_code, rewrite.exit_code} else EXIT_OK
        log.info(
            "eval.filed",
            heartbeat=heartbeat.outcome,
            rewrite=rewrite.outcome,
            chunks=heartbeat.chunks_extracted,
            failed=heartbeat.chunks_failed,
        )
        yield EvalRun(settings, set_env, heartbeat.outcome, rewrite.outcome, code)


def _clock_at(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment
