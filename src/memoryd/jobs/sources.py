"""The configured transcript sources, as the heartbeat reads them and `status` measures them."""

from __future__ import annotations

from memoryd.extractors.intake import Source
from memoryd.settings import Settings
from memoryd.sources.reader import SourceReader


def source_key(format_name: str, path: str) -> str:
    """A source's identity in the state database: its format and configured path."""
    return f"{format_name}:{path}"


def build_sources(settings: Settings) -> list[Source]:
    return [
        Source(agent.name, source_key(source.format, source.path), SourceReader(agent.name, source))
        for agent in settings.agents
        for source in agent.sources
    ]
