"""The config `format` names (DESIGN §3) and the format each one reads."""

from __future__ import annotations

from collections.abc import Mapping

from memoryd.errors import MemorydError
from memoryd.sources.chatgpt import ChatGptExportFormat
from memoryd.sources.claude_code import ClaudeCodeFormat
from memoryd.sources.codex import CodexFormat
from memoryd.sources.formats import Format
from memoryd.sources.jsonl import JsonlFormat
from memoryd.sources.markdown import MarkdownFormat
from memoryd.sources.openclaw import OpenClawFormat
from memoryd.sources.paperclip import PaperclipFormat


class UnknownFormatError(MemorydError, KeyError):
    """No reader is registered under a format name."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"unknown transcript format {name!r}; known: {', '.join(FORMATS)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


FORMATS: Mapping[str, Format] = {
    fmt.name: fmt
    for fmt in (
        ClaudeCodeFormat(),
        CodexFormat(),
        OpenClawFormat(),
        PaperclipFormat(),
        ChatGptExportFormat(),
        JsonlFormat(),
        MarkdownFormat(),
    )
}


def get_format(name: str) -> Format:
    """Return the format registered under `name`. Raise UnknownFormatError if there is none."""
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormatError(name) from None
