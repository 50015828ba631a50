"""The config `format` names (docs/configuration.md) and the format each one reads.

Each format's module is imported the first time its name is looked up, so a process pays only
for the formats its configuration names (an idle heartbeat starts as a fresh process).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from memoryd.errors import MemorydError
from memoryd.sources.formats import Format

# Name -> (module, class), in the order of docs/configuration.md
_READERS: dict[str, tuple[str, str]] = {
    "claude-code": ("memoryd.sources.claude_code", "ClaudeCodeFormat"),
    "codex": ("memoryd.sources.codex", "CodexFormat"),
    "openclaw": ("memoryd.sources.openclaw", "OpenClawFormat"),
    "paperclip": ("memoryd.sources.paperclip", "PaperclipFormat"),
    "chatgpt-export": ("memoryd.sources.chatgpt", "ChatGptExportFormat"),
    "jsonl": ("memoryd.sources.jsonl", "JsonlFormat"),
    "markdown": ("memoryd.sources.markdown", "MarkdownFormat"),
}


class UnknownFormatError(MemorydError, KeyError):
    """No reader is registered under a format name."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"unknown transcript format {name!r}; known: {', '.join(FORMATS)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class _Formats(Mapping[str, Format]):
    """The registered formats by name, each made (its module imported) on first lookup."""

    def __init__(self, readers: Mapping[str, tuple[str, str]]) -> None:
        self._readers = readers
        self._made: dict[str, Format] = {}

    def __getitem__(self, name: str) -> Format:
        made = self._made.get(name)
        if made is None:
            module, cls = self._readers[name]  # KeyError for an unknown name
            made = self._made[name] = getattr(importlib.import_module(module), cls)()
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._readers)

    def __len__(self) -> int:
        return len(self._readers)


FORMATS: Mapping[str, Format] = _Formats(_READERS)


def get_format(name: str) -> Format:
    """Return the format registered under `name`. Raise UnknownFormatError if there is none."""
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormatError(name) from None
