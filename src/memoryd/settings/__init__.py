"""The configuration: one frozen, typed model loaded from TOML (docs/configuration.md).

Loading happens in two passes. The first validates the file against the model and reports every
problem at once, each as ``At 'key.path': message``; unknown keys are errors. The second,
`check_environment`, looks at the world the configuration describes (store, state directory,
credentials, prices, cron, sources) and again reports every problem at once, plus warnings for
things that are fine today but worth knowing (a source folder an agent has not created yet).

Nothing here reads the process environment by itself: callers pass the environment mapping in.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memoryd.errors import ConfigError
from memoryd.settings._model import (
    SOURCE_FORMATS,
    AgentSettings,
    BackfillSettings,
    BudgetSettings,
    CleaningSettings,
    DecaySettings,
    EntitySettings,
    GitSettings,
    IndexSettings,
    LLMSettings,
    PriceSettings,
    ReadingSettings,
    RewriteSettings,
    ScheduleSettings,
    Settings,
    SourceFormat,
    SourceSettings,
    StateSettings,
    StoreSettings,
)
from memoryd.settings.problems import cross_field_problems, describe, read_toml

__all__ = [
    "CREDENTIAL_NAME",
    "DEFAULT_CONFIG_PATHS",
    "SOURCE_FORMATS",
    "AgentSettings",
    "BackfillSettings",
    "BudgetSettings",
    "CheckReport",
    "CleaningSettings",
    "DecaySettings",
    "EntitySettings",
    "GitSettings",
    "IndexSettings",
    "LLMSettings",
    "LoadedConfig",
    "PriceSettings",
    "ReadingSettings",
    "RewriteSettings",
    "ScheduleSettings",
    "Settings",
    "SourceFormat",
    "SourceSettings",
    "StateSettings",
    "StoreSettings",
    "check_environment",
    "find_api_key",
    "find_base_url",
    "load_settings",
    "parse_settings",
    "resolve_config_path",
    "state_directory",
]

DEFAULT_CONFIG_PATHS = (Path("memoryd.toml"), Path("/etc/memoryd/memoryd.toml"))
CREDENTIAL_NAME = "anthropic-api-key"


@dataclass(frozen=True)
class LoadedConfig:
    """A validated configuration and the file it came from."""

    path: Path
    settings: Settings


@dataclass
class CheckReport:
    """What `check_environment` found: problems make the configuration unusable."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def resolve_config_path(explicit: str | None, environ: Mapping[str, str]) -> Path:
    """Given the `--config` value and the environment, return the configuration file to use.

    Order: `--config`, `$MEMORYD_CONFIG`, `./memoryd.toml`, `/etc/memoryd/memoryd.toml`. Raise
    ConfigError when none of them exists.
    """
    if explicit:
        return Path(explicit)
    if environ.get("MEMORYD_CONFIG"):
        return Path(environ["MEMORYD_CONFIG"])
    for candidate in DEFAULT_CONFIG_PATHS:
        if candidate.is_file():
            return candidate
    raise ConfigError(
        None,
        [
            "no configuration file found: pass --config PATH, set MEMORYD_CONFIG, or create "
            + " or ".join(str(p) for p in DEFAULT_CONFIG_PATHS)
        ],
    )


def load_settings(path: Path, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Given a TOML file, return the validated settings. Raise ConfigError listing every problem.

    Relative paths in the file are taken relative to the file's own folder, so a configuration
    means the same thing whatever the working directory. With `environ` (`memoryd check`), an
    invalid file's problems come with the environment problems of the tables that did validate.
    """
    try:
        raw = read_toml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(path, ["the file does not exist"]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(path, [f"cannot read the file: {error}"]) from None
    except ValueError as error:
        raise ConfigError(path, [f"not valid TOML: {error}"]) from None
    try:
        return LoadedConfig(path, parse_settings(raw, path))
    except ConfigError as error:
        if environ is not None:
            error.problems.extend(_environment_of_valid_parts(raw, path, environ))
        raise


def parse_settings(raw: Mapping[str, Any], path: Path | None = None) -> Settings:
    """Validate an already-parsed TOML document. Raise ConfigError listing every problem.

    The rules joining fields are checked over the raw values too, so they are reported in the
    same run as the problems of single fields.
    """
    problems = cross_field_problems(raw)
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as error:
        found = [describe(item, raw, Settings) for item in error.errors()]
        raise ConfigError(path, found + problems) from None
    if problems:
        raise ConfigError(path, problems)
    if path is not None:
        settings = _anchor_paths(settings, path.resolve().parent)
    return settings


def _environment_of_valid_parts(
    raw: Mapping[str, Any], path: Path, environ: Mapping[str, str]
) -> list[str]:
    """The environment problems of the tables (and agents) that validated, the others left out."""
    try:
        Settings.model_validate(raw)
    except ValidationError as error:
        locs = [tuple(item["loc"]) for item in error.errors()]
    else:
        locs = []
    failed = {loc[0] for loc in locs if loc}
    kept = {key: value for key, value in raw.items() if key not in failed}
    agents = raw.get("agents")
    bad = {loc[1] for loc in locs if len(loc) > 1 and loc[0] == "agents"}
    if isinstance(agents, list) and all(isinstance(i, int) for i in bad):
        kept["agents"] = [agent for i, agent in enumerate(agents) if i not in bad]
        failed.discard("agents")
    if "store" in failed:
        kept["store"] = {"path": str(path.parent)}  # a stand-in; its problems are not said
    try:
        settings = _anchor_paths(Settings.model_validate(kept), path.resolve().parent)
    except ValidationError:
        return []
    report = check_environment(settings, environ)
    return [p for p in report.problems if _top_key(p) not in failed]


def _top_key(problem: str) -> str:
    match = re.match(r"At '([a-z_]+)", problem)
    return match.group(1) if match else ""


def _anchor(path: Path, base: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else base / path


def _anchor_source(source: SourceSettings, base: Path) -> SourceSettings:
    return source.model_copy(update={"path": str(_anchor(Path(source.path), base))})


def _anchor_paths(settings: Settings, base: Path) -> Settings:
    store = settings.store.model_copy(update={"path": _anchor(settings.store.path, base)})
    state = settings.state
    if state.path is not None:
        state = state.model_copy(update={"path": _anchor(state.path, base)})
    llm = settings.llm
    if llm.api_key_file is not None:
        llm = llm.model_copy(update={"api_key_file": _anchor(llm.api_key_file, base)})
    agents = [
        agent.model_copy(update={"sources": [_anchor_source(s, base) for s in agent.sources]})
        for agent in settings.agents
    ]
    return settings.model_copy(
        update={"store": store, "state": state, "llm": llm, "agents": agents}
    )


def state_directory(settings: Settings, environ: Mapping[str, str]) -> Path:
    """Return the state directory: `state.path`, else `$STATE_DIRECTORY`, else the XDG default."""
    if settings.state.path is not None:
        return settings.state.path
    if environ.get("STATE_DIRECTORY"):
        # systemd may pass several colon-separated directories; the first is ours.
        return Path(environ["STATE_DIRECTORY"].split(":")[0])
    if environ.get("XDG_STATE_HOME"):
        return Path(environ["XDG_STATE_HOME"]) / "memoryd"
    return Path(environ.get("HOME", "~")).expanduser() / ".local" / "state" / "memoryd"


def find_api_key(settings: Settings, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """Return the API key and where it was found (for messages; never the key itself).

    Order: `llm.api_key_file`, `$CREDENTIALS_DIRECTORY/anthropic-api-key`, `ANTHROPIC_API_KEY`.
    A configured key file that cannot be read is not skipped silently: it yields no key.
    """
    if settings.llm.api_key_file is not None:
        key_file = settings.llm.api_key_file
        return _read_key(key_file), f"llm.api_key_file ({key_file})"
    if environ.get("CREDENTIALS_DIRECTORY"):
        credential = Path(environ["CREDENTIALS_DIRECTORY"]) / CREDENTIAL_NAME
        if credential.exists():
            return _read_key(credential), f"systemd credential {CREDENTIAL_NAME}"
    if environ.get("ANTHROPIC_API_KEY"):
        return environ["ANTHROPIC_API_KEY"].strip(), "ANTHROPIC_API_KEY"
    return None, "nowhere"


def _read_key(path: Path) -> str | None:
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return key or None


def find_base_url(settings: Settings, environ: Mapping[str, str]) -> str | None:
    """Return `llm.base_url`, else `$ANTHROPIC_BASE_URL`, else None (the SDK's default)."""
    return settings.llm.base_url or environ.get("ANTHROPIC_BASE_URL") or None


def check_environment(settings: Settings, environ: Mapping[str, str]) -> CheckReport:
    """Check what the configuration points at. Return every problem and warning found."""
    report = CheckReport()
    _check_store(settings.store.path, report)
    _check_writable_dir(state_directory(settings, environ), "state.path", report)
    _check_llm(settings, environ, report)
    _check_schedule(settings.schedule, report)
    for agent in settings.agents:
        if not agent.sources:
            report.warnings.append(
                f"At 'agents[\"{agent.name}\"].sources': agent {agent.name!r} has no sources"
            )
        for s, source in enumerate(agent.sources):
            _check_source(source, f'agents["{agent.name}"].sources[{s}].path', report)
    if not settings.agents:
        report.warnings.append("At 'agents': no agents are configured; heartbeats will do nothing")
    return report


def _check_store(path: Path, report: CheckReport) -> None:
    if path.exists() and not path.is_dir():
        report.problems.append(f"At 'store.path': {path} exists and is not a directory")
        return
    if path.is_symlink():
        report.problems.append(f"At 'store.path': {path} is a symlink; name the real directory")
        return
    existing = _nearest_existing(path)
    if not os.access(existing, os.W_OK | os.X_OK):
        report.problems.append(
            f"At 'store.path': {existing} is not writable, so the store cannot be created or used"
        )


def _check_writable_dir(path: Path, key: str, report: CheckReport) -> None:
    if path.exists() and not path.is_dir():
        report.problems.append(f"At '{key}': {path} exists and is not a directory")
        return
    existing = _nearest_existing(path)
    if not os.access(existing, os.W_OK | os.X_OK):
        report.problems.append(f"At '{key}': {existing} is not writable")


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _check_llm(settings: Settings, environ: Mapping[str, str], report: CheckReport) -> None:
    llm = settings.llm
    if llm.provider != "anthropic":
        return
    key, _where = find_api_key(settings, environ)
    if key is None:
        if llm.api_key_file is not None:
            report.problems.append(
                f"At 'llm.api_key_file': cannot read an API key from {llm.api_key_file}"
            )
        else:
            report.problems.append(
                "At 'llm': no API key found: set llm.api_key_file, pass the systemd credential "
                f"'{CREDENTIAL_NAME}' (LoadCredential=), or set ANTHROPIC_API_KEY"
            )
    if settings.budget.daily_usd > 0 or settings.budget.heartbeat_usd > 0:
        table = llm.price_table()
        for key_name, model in (("llm.model", llm.model), ("llm.rewrite_model", llm.rewrite_model)):
            if not table.knows(model):
                report.problems.append(
                    f"At '{key_name}': no price is known for {model!r}, so the budget cannot be "
                    f'enforced; add llm.prices."{model}" = {{ input = ..., output = ... }}'
                )


def _check_schedule(schedule: ScheduleSettings, report: CheckReport) -> None:
    from apscheduler.triggers.cron import CronTrigger  # noqa: PLC0415 - only `check` needs it

    fields = schedule.rewrite_cron.split()
    if len(fields) != 5:
        report.problems.append(
            "At 'schedule.rewrite_cron': needs five fields (minute hour day month day-of-week)"
        )
        return
    if re.search(r"\d", fields[4]):
        report.problems.append(
            "At 'schedule.rewrite_cron': write the day of week with names (mon..sun): "
            "APScheduler counts 0 as Monday where cron counts it as Sunday"
        )
        return
    try:
        CronTrigger.from_crontab(schedule.rewrite_cron, timezone=schedule.zone)
    except ValueError as error:
        report.problems.append(f"At 'schedule.rewrite_cron': {error}")


def _check_source(source: SourceSettings, key: str, report: CheckReport) -> None:
    path = Path(source.path)
    if any(ch in source.path for ch in "*?["):
        if not glob.glob(source.path, recursive=True):
            report.warnings.append(f"At '{key}': nothing matches {source.path} yet")
        return
    try:
        is_dir = stat.S_ISDIR(os.stat(path).st_mode)
    except FileNotFoundError:
        report.warnings.append(f"At '{key}': {path} does not exist yet")
        return
    except OSError as error:  # a parent folder it cannot enter (a 0700 home), a link loop
        report.problems.append(f"At '{key}': {path} is not readable: {error.strerror or error}")
        return
    mode = os.R_OK | (os.X_OK if is_dir else 0)
    if not os.access(path, mode):
        report.problems.append(f"At '{key}': {path} is not readable")
