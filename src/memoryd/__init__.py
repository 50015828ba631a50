"""memoryd: a heartbeat daemon that gives AI agents a long-term, git-backed memory."""

__version__ = "0.1.0"

# The log levels `--log-level` accepts; here so that the argument parser needs no import of the
# logging setup (structlog) before it knows the command.
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
