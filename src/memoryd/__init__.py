"""memoryd: a heartbeat daemon that gives AI agents a long-term, git-backed memory."""

__version__ = "0.1.0"
