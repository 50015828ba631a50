"""The little Markdown structure the store's notes and skill files need: `## ` sections.

A text splits into a preamble (every line before the first `## ` heading) and sections, each a
title and the lines below it up to the next `## ` heading. Joining them back with `join_sections`
gives the original text, apart from trailing whitespace, so a file can be edited section by
section without disturbing what a person wrote elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_BULLET = re.compile(r"^\s*[-*+]\s+")


@dataclass
class Section:
    title: str
    lines: list[str] = field(default_factory=list)


def split_sections(text: str) -> tuple[list[str], list[Section]]:
    """The preamble lines and the `## ` sections of `text`."""
    preamble: list[str] = []
    sections: list[Section] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append(Section(line[3:].strip()))
        elif sections:
            sections[-1].lines.append(line)
        else:
            preamble.append(line)
    return preamble, sections


def join_sections(preamble: list[str], sections: list[Section]) -> str:
    """The text of a preamble and sections: blank lines at the ends of each part trimmed, one
    blank line around each heading, a single newline at the end."""
    lines = _trimmed(preamble)
    for section in sections:
        body = _trimmed(section.lines)
        lines += ["", f"## {section.title}", *([""] if body else []), *body]
    return "\n".join(lines).strip("\n") + "\n"


def _trimmed(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def bullet_text(line: str) -> str | None:
    """The text of a list item line (`- x`, `* x`, `+ x`), or None when it is not one."""
    match = _BULLET.match(line)
    return line[match.end() :] if match else None


def first_heading(text: str) -> str | None:
    """The text of the first `# ` heading, or None."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None
