"""The configured transcript sources, as the heartbeat reads them and `status` measures them."""

from __future__ import annotations

import stat
from pathlib import Path

from memoryd.extractors.intake import Source
from memoryd.jobs.remembered import RememberedFormat
from memoryd.logs import get_logger
from memoryd.reading.remember import agent_folder_name, remembered_root
from memoryd.settings import Settings, SourceSettings
from memoryd.sources.reader import SourceReader

log = get_logger(__name__)


def source_key(format_name: str, path: str) -> str:
    """A source's identity in the state database: its format and configured path."""
    return f"{format_name}:{path}"


def build_sources(settings: Settings, state_dir: Path | None = None) -> list[Source]:
    """The configured sources, plus (given the state directory) one per agent that queued
    memories through `remember` (`memoryd.reading.remember`). A remembered folder is read only
    when it is a real folder (not a symlink) named for a configured agent, as that agent's
    words (`memoryd.jobs.remembered`); any other entry is skipped (`queue.unsafe`,
    `remember.folder_refused`)."""
    sources = [
        Source(agent.name, source_key(source.format, source.path), SourceReader(agent.name, source))
        for agent in settings.agents
        for source in agent.sources
    ]
    queued = remembered_root(state_dir) if state_dir is not None else None
    if queued is not None and _real_folder(queued.parent) and _real_folder(queued):
        agents = {agent_folder_name(agent.name): agent.name for agent in settings.agents}
        uids = {agent.name: agent.uid() for agent in settings.agents}
        for folder in sorted(queued.iterdir()):
            if not _real_folder(folder):
                continue
            if folder.name not in agents:
                log.warning("remember.folder_refused", path=str(folder), reason="no such agent")
                continue
            remembered = SourceSettings(format="jsonl", path=str(folder))
            key = source_key("remembered", folder.name)
            reader = SourceReader(agents[folder.name], remembered)
            reader.format = RememberedFormat(folder.name, uids[agents[folder.name]])
            sources.append(Source(agents[folder.name], key, reader))
    return sources


def _real_folder(path: Path) -> bool:
    """Whether `path` is a folder and not a symlink (the queue is group-writable); a symlink or
    special file is logged (`queue.unsafe`) and left."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    if stat.S_ISDIR(mode):
        return True
    if not stat.S_ISREG(mode):
        log.warning("queue.unsafe", path=str(path), kind=stat.filemode(mode), action="skipped")
    return False
