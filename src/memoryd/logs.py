"""Logging: structlog configured once, at the entry point, for memoryd and every library.

Every line carries `event`, `level`, `timestamp` (UTC, ISO 8601) and `logger`. On a terminal the
lines are rendered for people; elsewhere (journald, pipes, files) one JSON object per line. Logs go
to stderr; command results go to stdout. Standard-library loggers (apscheduler, httpx2, anthropic,
git) are routed through the same processors, so they come out in the same shape.

Secrets never reach a log line: a processor replaces the value of any key that names a secret
(`api_key`, `token`, `authorization`, …) and runs every string value through the redactor.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any, Literal, TextIO

import structlog
import structlog.tracebacks
from structlog.typing import EventDict, Processor, WrappedLogger

from memoryd import LOG_LEVELS
from memoryd.redaction import redact

LogFormat = Literal["auto", "json", "console"]
_SECRET_KEY = re.compile(
    r"(?i)(api[_-]?key|secret|passw(or)?d|token|authorization|credential|cookie|private[_-]?key)"
)
# Keys whose values are counters or names, never secrets, although their names match above.
_SAFE_KEYS = frozenset(
    {
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "estimated_tokens",
        "tokens",
        "max_tokens",
        "secret_kinds",
        "key_source",
    }
)
# Libraries that are chatty at INFO; their INFO lines describe each HTTP request.
_QUIET_LIBRARIES = ("httpx", "httpx2", "httpcore", "httpcore2", "anthropic", "git")


def redact_secrets(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Replace secret-named values and scrub secrets out of every string value."""
    for key, value in list(event_dict.items()):
        event_dict[key] = _scrub(key, value)
    return event_dict


def _scrub(key: str, value: Any) -> Any:
    if key not in _SAFE_KEYS and _SECRET_KEY.search(key) and value not in (None, "", 0):
        return "[REDACTED]"
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, MutableMapping):
        return {k: _scrub(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub("", item) for item in value]
    return value


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def configure_logging(
    log_format: LogFormat = "auto",
    level: str = "info",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and the standard library's root logger. Call once per process."""
    stream = stream if stream is not None else sys.stderr
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        message = f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}"
        raise ValueError(message)  # noqa: TRY004 - a bad value, not a bad type
    use_console = log_format == "console" or (log_format == "auto" and stream.isatty())

    renderer: Processor
    if use_console:
        renderer = structlog.dev.ConsoleRenderer(colors=True)
    else:
        renderer = structlog.processors.JSONRenderer(sort_keys=True, default=str)
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if not use_console:
        # Tracebacks as structured data, without each frame's local variables: locals can hold
        # an API key or transcript text, and neither may reach a log line.
        final.append(
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            )
        )
    final += [redact_secrets, renderer]

    shared = _shared_processors()
    formatter = structlog.stdlib.ProcessorFormatter(foreign_pre_chain=shared, processors=final)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
    for name in _QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(numeric_level, logging.WARNING))

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """Return memoryd's logger for a module."""
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name)
    return logger
