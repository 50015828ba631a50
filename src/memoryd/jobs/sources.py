"""The configured transcript sources, as the heartbeat reads them and `status` measures them."""

from __future__ import annotations

from pathlib import Path

from memoryd.extractors.intake import Source
from memoryd.reading.remember import remembered_root
from memoryd.settings import Settings, SourceSettings
from memoryd.sources.reader import SourceReader


def source_key(format_name: str, path: str) -> str:
    """A source's identity in the state database: its format and configured path."""
    return f"{format_name}:{path}"


def build_sources(settings: Settings, state_dir: Path | None = None) -> list[Source]:
    """The configured sources, plus (given the state directory) one per agent that queued
    memories through `remember` (`memoryd.reading.remember`)."""
    sources = [
        Source(agent.name, source_key(source.format, source.path), SourceReader(agent.name, source))
        for agent in settings.agents
        for source in agent.sources
    ]
    queued = remembered_root(state_dir) if state_dir is not None else None
    if queued is not None and queued.is_dir():
        for folder in sorted(path for path in queued.iterdir() if path.is_dir()):
            remembered = SourceSettings(format="jsonl", path=str(folder))
            key = source_key("remembered", folder.name)
            sources.append(Source(folder.name, key, SourceReader(folder.name, remembered)))
    return sources
