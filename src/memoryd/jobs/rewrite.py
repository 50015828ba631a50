"""The weekly rewrite job: real parts wired from the settings, as `memoryd.jobs.heartbeat` does.

`run_rewrite` runs one rewrite inside a writing session (`memoryd.jobs.session`: settle, check
the store, reconcile and recover, pull, then push, `index.commands` and the search refresh after
a commit) with the LLM client (none for the markers provider) open for its length; the caller
holds the single-writer lock. `poll_rewrite_batch` is the daemon's cheap periodic check: it does
nothing at all unless a batch is pending, and then only collects it in a session that neither
settles nor pulls (and pushes what it committed).
`explain` reads the store and the tracking, never writes.

Checks at start: the rewrite's prompt files (`REWRITE_PROMPT_NAMES`) must load; a missing or
malformed one is a packaging mistake and raises PromptError before anything is touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.gitrepo import GitStore
from memoryd.jobs.environment import Environment, host_name, open_state
from memoryd.jobs.parts import (
    git_store,
    llm_client_for,
    make_scanner,
    make_scrubber,
    prepare_store,
)
from memoryd.jobs.reconcile import reconcile_state
from memoryd.jobs.session import writing_session
from memoryd.llm.tokens import estimate_tokens_for
from memoryd.prompts import check_prompts
from memoryd.rewrite import consolidate
from memoryd.rewrite.bounded import TACIT_DONE_KEY
from memoryd.rewrite.engine import Rewrite, RewriteOptions
from memoryd.rewrite.explain import explain_target
from memoryd.rewrite.report import RewriteReport
from memoryd.rewrite.select import Mode, select
from memoryd.rewrite.staging import archives
from memoryd.settings import Settings
from memoryd.state.facade import State
from memoryd.store.catalog import EntityCatalog
from memoryd.store.tiers import TierRule
from memoryd.worktree import UnitOfWork

if TYPE_CHECKING:
    from memoryd.llm.anthropic_client import AnthropicClient

REWRITE_PROMPT_NAMES = (
    "summary-system",
    "summary-user",
    "consolidate-system",
    "consolidate-user",
)


def rewrite_options(settings: Settings) -> RewriteOptions:
    return RewriteOptions(
        zone=settings.schedule.zone,
        rule=TierRule.from_settings(settings.decay),
        model=settings.llm.rewrite_model,
        use_batches=settings.rewrite.use_batches,
        skills_dir=settings.store.skills_dir,
        tacit_file=settings.store.tacit_file,
        daily_usd=settings.budget.daily_usd,
    )


def build_rewrite(
    settings: Settings,
    env: Environment,
    state: State,
    client: AnthropicClient | None,
    *,
    dry_run: bool = False,
    run_id: str | None = None,
    git: GitStore | None = None,
) -> Rewrite:
    """A Rewrite over real parts. Given the `git` of a writing session (`memoryd.jobs.session`),
    which has checked the store and reconciled the state database, it works on it; otherwise
    (a dry run) the store is checked here and nothing is changed."""
    check_prompts(REWRITE_PROMPT_NAMES)
    if git is None:
        git = git_store(settings, env.clock)
        prepare_store(git, dry_run=dry_run)
        if not dry_run:
            reconcile_state(state, git, host_name(settings, env), env.clock())
    return Rewrite(
        settings=rewrite_options(settings),
        state=state,
        git=git,
        client=client,
        batch_client=client,
        prices=settings.llm.price_table(),
        clock=env.clock,
        scan_secrets=make_scanner(settings),
        scrub=make_scrubber(settings),
        run_id=run_id,
    )


def run_rewrite(
    settings: Settings, env: Environment, *, dry_run: bool = False, run_id: str | None = None
) -> RewriteReport:
    """One weekly rewrite now (see the module docstring). With `dry_run`, no model is called,
    nothing is pulled, pushed or written: the report's `plan` says what would be done."""
    if dry_run:
        with open_state(settings, env) as state:
            rewrite = build_rewrite(settings, env, state, None, dry_run=True, run_id=run_id)
            # The plan is for the configured provider, though no client is opened.
            plan = dry_run_plan(
                rewrite, "template" if settings.llm.provider == "markers" else "llm"
            )
            return RewriteReport(rewrite.run_id, outcome="dry-run", plan=plan)
    check_prompts(REWRITE_PROMPT_NAMES)
    with (
        writing_session(settings, env) as session,
        llm_client_for(settings, env) as client,
    ):
        rewrite = build_rewrite(
            settings, env, session.state, client, run_id=run_id, git=session.git
        )
        report = rewrite.run()
        session.record_commit(report.commit)
    return report


def dry_run_plan(rewrite: Rewrite, mode: Mode) -> dict[str, object]:
    """What `rewrite` would do now in `mode`, without calling any model or changing anything."""
    uow = UnitOfWork(rewrite.git)  # read-only: never applied
    catalog = EntityCatalog.load(uow)
    selection = select(
        uow,
        catalog.entities(),
        rewrite.state.rewrites.all(),
        today=rewrite.today,
        rule=rewrite.settings.rule,
        mode=mode,
    )
    to_write = [c for c in selection.changed if c.input.in_use]
    tokens = 0
    if mode == "llm":
        for candidate in to_write:
            request = rewrite.summary_request(candidate.input)
            tokens += estimate_tokens_for(request.model, request.system + request.user_content)
            tokens += 500
    settings = rewrite.settings
    targets = consolidate.find_targets(
        uow,
        settings.skills_dir,
        settings.tacit_file,
        rewrite.state.meta.get(TACIT_DONE_KEY),  # the tacit file is due when its bullets changed
    )
    pending = rewrite.state.rewrites.pending_batch()
    return {
        "today": rewrite.today.isoformat(),
        "mode": mode,
        "use_batches": settings.use_batches,
        "model": settings.model,
        "entities": selection.entities,
        "entities_parsed": selection.parsed,
        "selected": [c.input.entity.ref for c in selection.changed],
        "summaries_to_write": len(to_write),
        # As the real run counts them: summaries that change to the cold-facts form.
        "archived": sum(archives(uow, c) for c in selection.changed if not c.input.in_use),
        "estimated_input_tokens": tokens,
        "consolidation_targets": [t.path for t in targets] if mode == "llm" else [],
        # The tacit lines the model would be shown to merge (0 when the file is not due).
        "tacit_lines_to_consolidate": sum(len(t.tips) for t in targets if t.kind == "tacit")
        if mode == "llm"
        else 0,
        "pending_batch": pending.batch_id if pending else None,
        "corrupt": selection.corrupt,
    }


def poll_rewrite_batch(settings: Settings, env: Environment) -> RewriteReport | None:
    """Collect a pending rewrite batch if there is one (the caller holds the lock); None, having
    opened neither git nor the API, when no batch is pending."""
    with open_state(settings, env) as state:
        if state.rewrites.pending_batch() is None:
            return None
    with (
        writing_session(settings, env, settle=False) as session,
        llm_client_for(settings, env) as client,
    ):
        rewrite = build_rewrite(settings, env, session.state, client, git=session.git)
        report = rewrite.run(poll_only=True)
        session.record_commit(report.commit)
    return report


def explain(settings: Settings, env: Environment, target: str) -> str:
    """Why a fact (or each fact of an entity) is hot, warm or cold, and whether it is in the
    summary. `target` is a fact id, ref, slug, name or alias (`memoryd.rewrite.explain`).
    Raise UnknownTargetError when it names no entity or several."""
    git = git_store(settings, env.clock)
    today = env.clock().astimezone(settings.schedule.zone).date()
    with open_state(settings, env) as state:
        return explain_target(
            UnitOfWork(git),
            target,
            today=today,
            rule=TierRule.from_settings(settings.decay),
            tracking=state.rewrites.get,
        )
