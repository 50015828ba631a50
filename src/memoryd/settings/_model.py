"""The configuration's typed model (docs/configuration.md): one frozen pydantic model per table.

Unknown keys are errors (`extra="forbid"`); every value is checked where it is declared, so a
problem is reported with its key path. Loading, path anchoring and the checks of the world the
configuration points at live in `memoryd.settings`, which re-exports these names.
"""

# No `from __future__ import annotations`: pydantic would compile every annotation string to
# evaluate it, a measurable share of a one-shot command's start-up.

import pwd
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memoryd.llm.prices import ModelPrice, PriceTable

SOURCE_FORMATS = (
    "claude-code",
    "codex",
    "openclaw",
    "paperclip",
    "chatgpt-export",
    "jsonl",
    "markdown",
)
SourceFormat = Literal[
    "claude-code", "codex", "openclaw", "paperclip", "chatgpt-export", "jsonl", "markdown"
]

# Agent and routine names become folder and file names; they are the operator's words, but are
# still held to a plain, portable shape.
_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_DURATION = re.compile(r"^\s*(\d+)\s*([hdw])\s*$")
_DURATION_UNITS = {"h": "hours", "d": "days", "w": "weeks"}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSettings(_Frozen):
    path: Path
    tacit_file: str = "MEMORY.md"
    skills_dir: str = "agents"

    @field_validator("tacit_file", "skills_dir")
    @classmethod
    def _plain_relative(cls, value: str) -> str:
        parts = Path(value).parts
        if not value or Path(value).is_absolute() or ".." in parts or value.startswith("."):
            raise ValueError("must be a plain path relative to the store, without '..'")
        if parts and parts[0] in {"life", "memory", ".git"}:
            raise ValueError(f"'{parts[0]}' is reserved for memoryd's own layout")
        return value


class StateSettings(_Frozen):
    path: Path | None = None
    # This host's name for its record in the store (.memoryd/hosts/<host>.json); default: the
    # machine's host name. Set it where the host name is not stable (a container).
    host: str | None = Field(default=None, min_length=1, max_length=64)


class PriceSettings(_Frozen):
    input: float = Field(strict=True, ge=0)
    output: float = Field(strict=True, ge=0)
    cache_write: float | None = Field(strict=True, default=None, ge=0)
    cache_read: float | None = Field(strict=True, default=None, ge=0)

    def to_price(self) -> ModelPrice:
        return ModelPrice(self.input, self.output, self.cache_write, self.cache_read)


class LLMSettings(_Frozen):
    provider: Literal["anthropic", "markers"] = "anthropic"
    model: str = Field(default="claude-haiku-5-5", min_length=1)
    rewrite_model: str = Field(default="claude-haiku-5-5", min_length=1)
    base_url: str | None = None
    api_key_file: Path | None = None
    timeout_seconds: float = Field(strict=True, default=120, gt=0, le=3600)
    max_output_tokens: int = Field(strict=True, default=4096, ge=256, le=20000)
    chunk_tokens: int = Field(strict=True, default=12000, ge=500, le=200_000)
    context_facts: int = Field(strict=True, default=40, ge=0, le=1000)
    max_attempts: int = Field(strict=True, default=5, ge=1, le=20)
    # Extraction requests in flight at once; results are still applied in order.
    concurrency: int = Field(strict=True, default=4, ge=1, le=64)
    # Short conversations of one agent and day sharing one extraction call.
    sections_per_call: int = Field(strict=True, default=10, ge=1, le=16)
    prices: dict[str, PriceSettings] = Field(default={})

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http:// or https:// URL")
        return value

    def price_table(self) -> PriceTable:
        return PriceTable({name: price.to_price() for name, price in self.prices.items()})


class BudgetSettings(_Frozen):
    daily_usd: float = Field(strict=True, default=5.0, ge=0)
    heartbeat_usd: float = Field(strict=True, default=0.0, ge=0)


class BackfillSettings(_Frozen):
    since: str = "7d"

    @field_validator("since")
    @classmethod
    def _duration(cls, value: str) -> str:
        if value != "all" and not _DURATION.match(value):
            raise ValueError("must be a duration like '12h', '7d' or '4w', or 'all'")
        return value

    @property
    def window(self) -> timedelta | None:
        """The backfill window, or None for 'all'."""
        match = _DURATION.match(self.since)
        if match is None:
            return None
        return timedelta(**{_DURATION_UNITS[match.group(2)]: int(match.group(1))})


class ScheduleSettings(_Frozen):
    heartbeat_minutes: int = Field(strict=True, default=30, ge=1, le=24 * 60)
    rewrite_cron: str = "0 3 * * sun"
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            message = f"unknown time zone {value!r} (use an IANA name like 'Europe/Berlin')"
            raise ValueError(message) from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class GitSettings(_Frozen):
    author_name: str = Field(default="memoryd", min_length=1)
    author_email: str = Field(default="memoryd@localhost", min_length=1)
    push: bool = Field(default=False, strict=True)
    remote: str = Field(default="origin", min_length=1)
    timeout_seconds: float = Field(strict=True, default=60, gt=0)
    # A push that has failed this many jobs in a row is an error (logged at every job, in
    # `status`, the one-shot exit code and the daemon's STATUS line).
    push_failure_limit: int = Field(strict=True, default=3, ge=1)


class EntitySettings(_Frozen):
    min_mentions: int = Field(strict=True, default=3, ge=1)


class DecaySettings(_Frozen):
    hot_days: int = Field(strict=True, default=7, ge=0)
    warm_days: int = Field(strict=True, default=30, ge=1)
    # Frequency resistance (memoryd.store.tiers): both limits are stretched by
    # floor(resistance_days_per_doubling * log2(1 + accessCount)) days, at most
    # max_resistance_days. 0 switches resistance off.
    resistance_days_per_doubling: float = Field(strict=True, default=3.0, ge=0, le=365)
    max_resistance_days: int = Field(strict=True, default=30, ge=0, le=3650)


class RewriteSettings(_Frozen):
    use_batches: bool = Field(default=False, strict=True)


class IndexSettings(_Frozen):
    commands: list[str] = Field(default=[])
    timeout_seconds: float = Field(strict=True, default=300, gt=0)
    init_commands: list[str] = Field(default=[])  # run once by `memoryd init`


class CleaningSettings(_Frozen):
    extra_patterns: list[str] = Field(default=[])
    tool_output_chars: int = Field(strict=True, default=2000, ge=0)

    @field_validator("extra_patterns")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"pattern {pattern!r} does not compile: {error}") from None
        return value


class ReadingSettings(_Frozen):
    # false: an agent's reading (context, search, MCP) leaves out other agents' skills and
    # daily-note timeline lines; true: every agent reads everything (docs/agents.md).
    share_between_agents: bool = Field(default=False, strict=True)


class SourceSettings(_Frozen):
    format: SourceFormat
    path: str = Field(min_length=1)
    routine: Annotated[str, Field(pattern=_NAME_PATTERN)] | None = None


class AgentSettings(_Frozen):
    name: Annotated[str, Field(pattern=_NAME_PATTERN)]
    # The OS user the agent runs as: its remembered files and queued reads count only when that
    # user (or root) owns them (docs/agents.md, "Whose words"). Unset: any writer in memoryd's
    # group may speak for it, as agents sharing one OS user cannot be told apart anyway.
    user: str | None = None
    sources: list[SourceSettings] = Field(default=[])

    @field_validator("user")
    @classmethod
    def _user_exists(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                pwd.getpwnam(value)
            except KeyError:
                raise ValueError(
                    f"no OS user {value!r} on this host: name the user the agent runs as, or "
                    "leave `user` out"
                ) from None
        return value

    def uid(self) -> int | None:
        """The uid of `user`, None when unset; -1 (no one) when the user has gone since."""
        if self.user is None:
            return None
        try:
            return pwd.getpwnam(self.user).pw_uid
        except KeyError:
            return -1


class Settings(_Frozen):
    store: StoreSettings
    state: StateSettings = StateSettings()
    llm: LLMSettings = LLMSettings()
    budget: BudgetSettings = BudgetSettings()
    backfill: BackfillSettings = BackfillSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    git: GitSettings = GitSettings()
    entities: EntitySettings = EntitySettings()
    decay: DecaySettings = DecaySettings()
    rewrite: RewriteSettings = RewriteSettings()
    index: IndexSettings = IndexSettings()
    cleaning: CleaningSettings = CleaningSettings()
    reading: ReadingSettings = ReadingSettings()
    agents: list[AgentSettings] = Field(default=[])

    def agent(self, name: str) -> AgentSettings:
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise KeyError(name)
