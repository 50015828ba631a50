"""`memoryd check [--online]` (docs/cli.md): the configuration and what it points at.

Exit 0 when all is well, 78 on any problem; warnings do not change the exit code. Nothing is
changed: what the next job would do about the state database is asked of
`memoryd.jobs.reconcile` and said as a warning.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from memoryd.budget import OUTPUT_TOKENS_GUESS, PROMPT_TOKENS_ALLOWANCE
from memoryd.daemon.preflight import root_warning, store_not_ready
from memoryd.daemon.status import STATUS_BUSY_TIMEOUT_MS
from memoryd.errors import EXIT_CONFIG, EXIT_OK, StoreError
from memoryd.extractors.extract import InvalidAnswerError
from memoryd.extractors.recovery import GENERATION_KEY
from memoryd.jobs.environment import Environment, host_name
from memoryd.jobs.parts import git_store, llm_client_for
from memoryd.jobs.reconcile import BINDING_KEY, has_learnt, reconcile_verdict
from memoryd.jobs.sync_health import host_code_clashes
from memoryd.jobs.trial import trial_extraction
from memoryd.llm.base import MODEL_KINDS, LLMError, PermanentLLMError, UnusableLLMError
from memoryd.llm.tokens import chunk_tokens_for
from memoryd.logs import get_logger
from memoryd.prompts import PromptError, check_prompts
from memoryd.settings import (
    CheckReport,
    LoadedConfig,
    check_environment,
    find_api_key,
    state_directory,
)
from memoryd.sources.access import unreadable_sources
from memoryd.sources.shapes import shape_problem, unreadable_glob
from memoryd.state.errors import StateBusyError, StateCorruptError, StateVersionError
from memoryd.state.facade import DATABASE_FILE_NAME, State
from memoryd.store.hosts import read_host_record
from memoryd.store.layout import check_store, read_format, store_identity
from memoryd.worktree import UnitOfWork

# The events of every command are logged under the command line's one logger name.
log = get_logger("memoryd.cli")


def cmd_check(
    args: argparse.Namespace, config: LoadedConfig, environ: Mapping[str, str], out: TextIO
) -> int:
    """Check the configuration and what it points at; exit 78 on any problem. Nothing is
    contacted unless `--online`, which proves the key, the endpoint and each model with a
    heartbeat's own request on a tiny excerpt (see `_online_problems`). Nothing is changed:
    the state database is only read, and what a job would do about it (move it aside, rebuild
    it) is a warning."""
    report = check_environment(config.settings, environ)
    report.problems.extend(_store_problems(config, environ))
    report.warnings.extend(_budget_warnings(config))
    report.warnings.extend(_host_warnings(config, environ))
    _check_state(config, environ, report)
    report.problems.extend(_prompt_problems())
    report.warnings.extend(_unreadable_file_warnings(config))
    _check_before_start(config, report)
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
    """Prove the API key, the endpoint and that `llm.model` (and `llm.rewrite_model` when it
    differs) can do memoryd's task: each is sent the request a heartbeat sends, on a tiny
    made-up excerpt (`memoryd.jobs.trial`: the tool, the tool choice the client uses for that
    model, prompt caching, one corrective retry), and must answer through the tool with a valid
    input. Print each model that did; return the problems, each naming the model, with the
    server's own message. A problem with the key, the account or the endpoint is not asked
    again for the second model."""
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
                extraction = trial_extraction(client, settings, model)
            except InvalidAnswerError as error:
                problems.append(
                    f"At '{key}': online: {model} at {client.endpoint} cannot do memoryd's task: "
                    f"asked to answer through the record_memories tool, it gave no valid tool "
                    f"answer ({error.reason}); choose another model"
                )
                continue
            except LLMError as error:
                about_model = _about_the_model(error)
                where = f"'{key}': online: {model}:" if about_model else "'llm': online:"
                problems.append(f"At {where} {error}")
                if not about_model:
                    break  # the key, the account or the endpoint: the next model says the same
                continue
            print(
                f"online: {client.endpoint} answered for {key} {model}: OK "
                f"(a valid record_memories answer, {extraction.usage.input_tokens} input tokens)",
                file=out,
            )
    return problems


def _about_the_model(error: LLMError) -> bool:
    """Whether a refused request is about the one model (the next may do better) rather than
    the key, the account or the endpoint."""
    if isinstance(error, UnusableLLMError):
        return error.kind == "permission" or error.kind in MODEL_KINDS
    return isinstance(error, PermanentLLMError)


def _print_report(report: CheckReport, config: LoadedConfig, out: TextIO) -> None:
    for problem in report.problems:
        print(f"error: {problem}", file=out)
    for warning in report.warnings:
        print(f"warning: {warning}", file=out)
    if report.ok:
        print(f"{config.path}: configuration OK", file=out)
    else:
        print(f"{config.path}: {len(report.problems)} problem(s)", file=out)


def _unreadable_file_warnings(config: LoadedConfig) -> list[str]:
    """Transcripts this user cannot read, counted per source with the fix. A warning, not a
    problem: the units run `check` before the daemon starts, and a file shared a minute later
    (`memoryd-share.timer`) must not keep the daemon from reading everything else. `status`
    keeps exiting 78 while they last."""
    return [f"At 'agents': {line}" for _, _, line in unreadable_sources(config.settings)]


def _prompt_problems() -> list[str]:
    """Every packaged prompt must load (a missing or malformed one is a packaging mistake)."""
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
    """A per-heartbeat ceiling below one full chunk's estimate (`llm.chunk_tokens`, as clamped
    for the model's price band, plus the prompt allowance in, `OUTPUT_TOKENS_GUESS` out, at
    `llm.model`'s price, as the budget estimates a call) lets each heartbeat send only its
    first chunk. An unpriced model is `check_environment`'s problem, not a warning here."""
    settings = config.settings
    ceiling = settings.budget.heartbeat_usd
    price = settings.llm.price_table().get(settings.llm.model)
    if settings.llm.provider != "anthropic" or ceiling <= 0 or price is None:
        return []
    chunk = chunk_tokens_for(settings.llm.model, settings.llm.chunk_tokens, PROMPT_TOKENS_ALLOWANCE)
    input_tokens = chunk + PROMPT_TOKENS_ALLOWANCE
    estimate = (input_tokens * price.input + OUTPUT_TOKENS_GUESS * price.output) / 1e6
    if ceiling >= estimate:
        return []
    return [
        f"At 'budget.heartbeat_usd': ${ceiling:g} is below the estimated cost of one full chunk "
        f"(${estimate:.4f}: {input_tokens} input tokens, a chunk of {chunk} plus "
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
    database = state_directory(config.settings, environ) / DATABASE_FILE_NAME
    if not database.is_file():
        return
    try:
        with State.open(database, busy_timeout_ms=STATUS_BUSY_TIMEOUT_MS) as state:
            binding = state.meta.get_json(BINDING_KEY)
            generation = state.meta.get(GENERATION_KEY)
            had_data = binding is None and has_learnt(state)
    except StateCorruptError as error:
        report.problems.append(
            f"At 'state.path': {error}; to do it now, move it aside yourself "
            f"(mv {database} {database}.damaged) or run `memoryd heartbeat` once"
        )
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


def _check_before_start(config: LoadedConfig, report: CheckReport) -> None:
    """What `run` and `heartbeat` refuse or warn about before they start, said here too: a
    store `memoryd init` has not made yet (a problem, as `run` and `heartbeat` refuse it with
    78: a set-up runs `init` before `check`, and a unit's `ExecStartPre=memoryd check` keeps a
    never-initialized daemon from starting), memoryd as root over another user's store (a
    warning), and each source whose shape its format does not read or whose glob cannot be
    listed (problems)."""
    settings = config.settings
    report.problems.extend(store_not_ready(settings))
    warning = root_warning(settings)
    if warning is not None:
        report.warnings.append(warning)
    for agent in settings.agents:
        for s, source in enumerate(agent.sources):
            key = f'agents["{agent.name}"].sources[{s}].path'
            problem = shape_problem(source.format, source.path)
            if problem is not None:
                report.problems.append(f"At '{key}': {problem}")
            unreadable = unreadable_glob(source.path)
            if unreadable is not None:
                report.problems.append(f"At '{key}': {source.path} is unreadable: {unreadable}")
                stale = f"At '{key}': nothing matches {source.path} yet"
                report.warnings[:] = [w for w in report.warnings if w != stale]
