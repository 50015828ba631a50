"""Every command of `memoryd`, as the parser dispatches them (docs/cli.md).

Each takes the parsed arguments, the loaded configuration, the process environment and the
stream for results, and returns the exit code. The job a command runs is imported inside it, so
a command pays only for what it uses (the `anthropic` SDK, for one, only when a job calls a
model). Exit codes of `rewrite`: 0 when its work is done, including when the deterministic
template stood in for an unreachable LLM (the summaries were written, the commit message and
`rewrite.finished` say so, and the next run asks the LLM again), 75 when another memoryd holds
the lock or a pending batch's status could not be fetched, 1 when the LLM refused a request for
good, 78 when the account, key, model or endpoint cannot be used (the template stood in; only the
operator can fix it, as for a configuration error). `heartbeat` exits 78 for the same reason
(`HeartbeatReport.exit_code`). `explain` exits 2 for an unknown fact id or ref.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from memoryd.cli.reading import READING_COMMANDS
from memoryd.cli.review import cmd_review
from memoryd.cli.startup import collector_paused
from memoryd.errors import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    ConfigError,
    StoreError,
    TransientError,
)
from memoryd.jobs.environment import LOCK_WAIT_SECONDS, Environment, open_state
from memoryd.jobs.lock import single_writer
from memoryd.logs import get_logger
from memoryd.settings import CheckReport, LoadedConfig, check_environment, state_directory

# The imports inside the commands below are deliberate (PLC0415): see the module docstring.

log = get_logger("memoryd.cli")

Command = Callable[[argparse.Namespace, LoadedConfig, Mapping[str, str], TextIO], int]


def cmd_check(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    """Check the configuration and what it points at; exit 78 on any problem. Nothing is
    contacted unless `--online`, which proves the key, the endpoint and each model with the
    cheapest real request (see `_online_problems`). Nothing is changed: the state database is
    only read, and what a job would do about it (move it aside, rebuild it) is a warning."""
    report = check_environment(config.settings, environ)
    report.problems.extend(_store_problems(config, environ))
    report.warnings.extend(_budget_warnings(config))
    report.warnings.extend(_host_warnings(config, environ))
    _check_state(config, environ, report)
    report.problems.extend(_prompt_problems())
    if args.online:
        report.problems.extend(_online_problems(config, environ, out))
    _print_report(report, config, out)
    log.info(
        "check.finished",
        path=str(config.path),
        problems=len(report.problems),
        warnings=len(report.warnings),
        online=args.online,
    )
    return EXIT_OK if report.ok else EXIT_CONFIG


def _online_problems(config: LoadedConfig, environ: Mapping[str, str], out: TextIO) -> list[str]:
    """Prove the API key, the endpoint and `llm.model` (and `llm.rewrite_model` when it differs)
    with one real request each, through the adapter the jobs use: a one-token answer to a
    one-word prompt. Print each model that answered; return the problems, each with the
    server's own message. A problem with the key, the account or the endpoint is not asked
    again for the second model."""
    from memoryd.jobs.parts import llm_client_for  # noqa: PLC0415
    from memoryd.llm.base import LLMError, UnusableLLMError  # noqa: PLC0415
    from memoryd.settings import find_api_key  # noqa: PLC0415

    settings = config.settings
    if settings.llm.provider == "markers":
        print('online: llm.provider is "markers": there is no endpoint to contact', file=out)
        return []
    if find_api_key(settings, environ)[0] is None:
        print("online: not tried: no API key (see the error below)", file=out)
        return []
    models = {"llm.model": settings.llm.model}
    if settings.llm.rewrite_model != settings.llm.model:
        models["llm.rewrite_model"] = settings.llm.rewrite_model
    problems: list[str] = []
    with llm_client_for(settings, Environment.live(environ)) as client:
        assert client is not None  # noqa: S101 - the markers provider returned above
        for key, model in models.items():
            try:
                request_id = client.probe(model)
            except LLMError as error:
                model_problem = isinstance(error, UnusableLLMError) and error.kind in (
                    "model_not_found",
                    "permission",
                )
                problems.append(f"At '{key if model_problem else 'llm'}': online: {error}")
                if not model_problem:
                    break  # the key, the account or the endpoint: the next model says the same
                continue
            print(
                f"online: {client.endpoint} answered for {key} {model}: OK "
                f"(request {request_id or 'without an id'})",
                file=out,
            )
    return problems


def _print_report(report: CheckReport, config: LoadedConfig, out: TextIO) -> None:
    for problem in report.problems:
        print(f"error: {problem}", file=out)
    for warning in report.warnings:
        print(f"warning: {warning}", file=out)
    if report.ok:
        print(f"{config.path}: configuration OK", file=out)
    else:
        print(f"{config.path}: {len(report.problems)} problem(s)", file=out)


def _prompt_problems() -> list[str]:
    """Every packaged prompt must load (a missing or malformed one is a packaging mistake)."""
    from memoryd.prompts import PromptError, check_prompts  # noqa: PLC0415

    try:
        check_prompts()
    except PromptError as error:
        return [f"prompts: {error}"]
    return []


def _store_problems(config: LoadedConfig, environ: Mapping[str, str]) -> list[str]:
    """Problems with an existing store: a format newer than this memoryd reads, a folder the
    enclosing repository ignores (memoryd would refuse to commit it), or a repository memoryd
    must not write to (a detached HEAD, a rebase or merge in progress). A folder that is not a
    store yet is no problem here: `memoryd init` makes it one."""
    from memoryd.jobs.parts import git_store  # noqa: PLC0415
    from memoryd.store.layout import check_store, read_format  # noqa: PLC0415

    store = config.settings.store.path
    if not store.is_dir() or read_format(store) is None:
        return []
    try:
        check_store(store)
        git = git_store(config.settings, Environment.live(environ).clock)
        git.check_not_ignored()
        if git.head() is not None:
            git.check_writable()  # a detached HEAD, a person's rebase or merge in progress
    except StoreError as error:
        return [f"At 'store.path': {error}"]
    return []


def _host_warnings(config: LoadedConfig, environ: Mapping[str, str]) -> list[str]:
    """In a shared store (`git.push`), another host whose name gives this host's range of fact
    ids: ids stay unique (a merge renumbers a clash) but a distinct `state.host` avoids it."""
    from memoryd.jobs.environment import host_name  # noqa: PLC0415
    from memoryd.jobs.sync_health import host_code_clashes  # noqa: PLC0415

    settings = config.settings
    if not settings.git.push:
        return []
    host = host_name(settings, Environment.live(environ))
    return [
        f"At 'state.host': host {other!r} numbers its fact ids in the same range as {host!r}; "
        "give this host another name"
        for other in host_code_clashes(settings.store.path, host)
    ]


def _budget_warnings(config: LoadedConfig) -> list[str]:
    """A per-heartbeat ceiling below one full chunk's estimate (`llm.chunk_tokens` plus the
    prompt allowance in, `OUTPUT_TOKENS_GUESS` out, at `llm.model`'s price, as the budget
    estimates a call) lets each heartbeat send only its first chunk. An unpriced model is
    `check_environment`'s problem, not a warning here."""
    from memoryd.budget import OUTPUT_TOKENS_GUESS, PROMPT_TOKENS_ALLOWANCE  # noqa: PLC0415

    settings = config.settings
    ceiling = settings.budget.heartbeat_usd
    price = settings.llm.price_table().get(settings.llm.model)
    if settings.llm.provider != "anthropic" or ceiling <= 0 or price is None:
        return []
    input_tokens = settings.llm.chunk_tokens + PROMPT_TOKENS_ALLOWANCE
    estimate = (input_tokens * price.input + OUTPUT_TOKENS_GUESS * price.output) / 1e6
    if ceiling >= estimate:
        return []
    return [
        f"At 'budget.heartbeat_usd': ${ceiling:g} is below the estimated cost of one full chunk "
        f"(${estimate:.4f}: {input_tokens} input tokens, llm.chunk_tokens plus "
        f"{PROMPT_TOKENS_ALLOWANCE} of prompt and context, and {OUTPUT_TOKENS_GUESS} output "
        f"tokens at the price of {settings.llm.model}): each heartbeat still sends its first "
        "chunk and then stops, so a backlog takes one heartbeat per chunk"
    ]


def _check_state(config: LoadedConfig, environ: Mapping[str, str], report: CheckReport) -> None:
    """Report what the next job would do about the state database, without doing it: a file
    that is not memoryd's database is moved aside, one bound to another store is emptied, one
    behind or ahead of this host's record in the store is rebuilt from it (docs/store-format.md, The
    store is the truth,
    `memoryd.jobs.reconcile`). Opened as `status` opens it, with a tiny busy timeout; a
    missing database is not opened (that would create it)."""
    from memoryd.daemon.status import STATUS_BUSY_TIMEOUT_MS  # noqa: PLC0415
    from memoryd.extractors.recovery import GENERATION_KEY  # noqa: PLC0415
    from memoryd.jobs.reconcile import BINDING_KEY, has_learnt  # noqa: PLC0415
    from memoryd.state.errors import (  # noqa: PLC0415
        StateBusyError,
        StateCorruptError,
        StateVersionError,
    )
    from memoryd.state.facade import DATABASE_FILE_NAME, State  # noqa: PLC0415

    database = state_directory(config.settings, environ) / DATABASE_FILE_NAME
    if not database.is_file():
        return
    try:
        with State.open(database, busy_timeout_ms=STATUS_BUSY_TIMEOUT_MS) as state:
            binding = state.meta.get_json(BINDING_KEY)
            generation = state.meta.get(GENERATION_KEY)
            had_data = binding is None and has_learnt(state)
    except StateCorruptError as error:
        report.warnings.append(f"At 'state.path': {error}")
        return
    except StateVersionError as error:
        report.problems.append(f"At 'state.path': {error}")
        return
    except StateBusyError:
        report.warnings.append(f"At 'state.path': {database} is busy; it was not checked")
        return
    report.warnings.extend(
        _state_against_store(config, environ, database, binding, generation, had_data=had_data)
    )


def _state_against_store(
    config: LoadedConfig,
    environ: Mapping[str, str],
    database: Path,
    binding: object,
    generation: str | None,
    *,
    had_data: bool,
) -> list[str]:
    """What the next job would do to the state database, as `memoryd.jobs.reconcile` decides it
    (`reconcile_verdict`), said as a warning; nothing when it would keep it, bind it, adopt it
    or fill a new, empty one from the store."""
    from memoryd.jobs.environment import host_name  # noqa: PLC0415
    from memoryd.jobs.parts import git_store  # noqa: PLC0415
    from memoryd.jobs.reconcile import reconcile_verdict  # noqa: PLC0415
    from memoryd.store.hosts import read_host_record  # noqa: PLC0415
    from memoryd.store.layout import read_format, store_identity  # noqa: PLC0415
    from memoryd.worktree import UnitOfWork  # noqa: PLC0415

    settings = config.settings
    if not settings.store.path.is_dir() or read_format(settings.store.path) is None:
        return []
    env = Environment.live(environ)
    host = host_name(settings, env)
    try:
        git = git_store(settings, env.clock)
        identity = store_identity(git)
        record = read_host_record(UnitOfWork(git), host)
    except StoreError:
        return []  # `_store_problems` reports what is wrong with the store
    verdict = reconcile_verdict(
        binding,
        generation,
        identity=identity,
        host=host,
        stored=record.generation if record is not None else 0,
        had_data=had_data,
    )
    wanted = {"host": host, "store": identity}
    if verdict.identity == "renamed":
        was = binding.get("host") if isinstance(binding, dict) else None
        return [
            f"At 'state.host': {database} is this store's state under the host name "
            f"{was!r}, not {host!r}: the next heartbeat keeps it and writes this "
            "host's record under the new name"
        ]
    if verdict.identity == "foreign":
        return [
            f"At 'state.path': {database} is the state of another store or host ({binding}, "
            f"not {wanted}): the next heartbeat or rewrite forgets what it learnt of that store "
            "and rebuilds the state from this one"
        ]
    # A database never bound nor filled is filled from the store: nothing to warn about.
    if verdict.rebuild is None or (verdict.rebuild == "missing" and generation is None):
        return []
    where = "behind" if verdict.cached < verdict.stored else "ahead of"
    return [
        f"At 'state.path': {database} is {where} the store (state generation {verdict.cached}, "
        f"this host's record in the store {verdict.stored}): the next heartbeat or rewrite "
        "rebuilds it from the store"
    ]


def cmd_init(
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.store.layout import init_store  # noqa: PLC0415

    report = check_environment(config.settings, environ)
    blocking = [
        p
        for p in report.problems
        if p.startswith(("At 'store.", "At 'state.")) or " is not readable" in p
    ]
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
    from memoryd.jobs.hooks import run_init_commands  # noqa: PLC0415

    ran = run_init_commands(config.settings, store.path, state_directory(config.settings, environ))
    if ran is not None:
        count = len(config.settings.index.init_commands)
        print(f"index.init_commands: {ran} of {count} succeeded", file=out)
    return EXIT_OK


def cmd_heartbeat(
    args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    with collector_paused():  # the job's modules: still start-up
        from memoryd.cli.progress import TerminalProgress  # noqa: PLC0415
        from memoryd.jobs.heartbeat import dry_run_heartbeat, run_heartbeat  # noqa: PLC0415

    settings = config.settings
    env = Environment.live(environ)
    if args.dry_run:
        report = dry_run_heartbeat(settings, env)
        print(json.dumps(report, indent=2, sort_keys=True), file=out)
        return EXIT_OK
    progress = TerminalProgress.for_stream(sys.stderr)  # a backfill by hand shows progress
    with single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds):
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
    for key, reason in sorted(result.sources_unreadable.items()):
        print(f"source {key} UNREADABLE ({reason}): nothing was read from it", file=out)
    return result.exit_code


def cmd_rewrite(
    args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    from memoryd.jobs.rewrite import run_rewrite  # noqa: PLC0415

    settings = config.settings
    env = Environment.live(environ)
    if args.dry_run:
        report = run_rewrite(settings, env, dry_run=True)
        print(json.dumps(report.plan, indent=2, sort_keys=True), file=out)
        return EXIT_OK
    with single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds):
        report = run_rewrite(settings, env)
    line = f"rewrite {report.outcome}: {report.message().removeprefix('rewrite: ')}"
    if report.batch_submitted:
        line += f"; batch {report.batch_submitted} submitted (a later run applies it)"
    if report.batch_pending:
        line += f"; batch {report.batch_pending} still pending"
    if report.refused:
        line += f"; {report.refused} refused (previous summary kept)"
    print(f"{line}; ${report.cost_usd:.4f}; commit {report.commit or 'none'}", file=out)
    return report.exit_code


def cmd_explain(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.jobs.rewrite import explain  # noqa: PLC0415

    print(explain(config.settings, Environment.live(environ), args.target), end="", file=out)
    return EXIT_OK


def cmd_run(
    _args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], _out: TextIO
) -> int:
    """The daemon. A configuration that cannot work exits 78 before anything is scheduled."""
    from memoryd.daemon.notify import Notifier  # noqa: PLC0415
    from memoryd.daemon.scheduler import Daemon  # noqa: PLC0415

    report = check_environment(config.settings, environ)
    if not report.ok:
        raise ConfigError(config.path, report.problems)
    for warning in report.warnings:
        log.warning("config.warning", path=str(config.path), warning=warning)
    daemon = Daemon(config, Environment.live(environ, long_lived=True), Notifier(environ))
    try:
        return daemon.run()
    except TransientError as error:
        # 75 would make systemd restart the daemon in a tight loop (docs/cli.md); a failure at
        # start-up (e.g. the state database locked) is an ordinary failure, restarted after
        # RestartSec.
        log.error("daemon.failed", error=str(error), error_type=type(error).__name__)
        return EXIT_FAILED


def cmd_status(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    from memoryd.daemon.status import collect_status, render_status  # noqa: PLC0415

    report = collect_status(config.settings, Environment.live(environ))
    if args.json:
        out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    else:
        out.write(render_status(report))
    return EXIT_OK


def cmd_retry(
    _args: argparse.Namespace,
    config: LoadedConfig,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    lock_wait_seconds: float = LOCK_WAIT_SECONDS,
) -> int:
    """Put every quarantined chunk back in the queue; the next heartbeat tries them again."""
    env = Environment.live(environ)
    settings = config.settings
    with (
        single_writer(state_directory(settings, environ), wait_seconds=lock_wait_seconds),
        open_state(settings, env) as state,
    ):
        count = state.failures.requeue_all(env.clock())
    log.info("retry.finished", requeued=count)
    out.write(f"requeued {count} quarantined chunk{'s' * (count != 1)}\n")
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "check": cmd_check,
    "init": cmd_init,
    "heartbeat": cmd_heartbeat,
    "rewrite": cmd_rewrite,
    "explain": cmd_explain,
    "run": cmd_run,
    "status": cmd_status,
    "retry": cmd_retry,
    "review": cmd_review,
    **READING_COMMANDS,
}
