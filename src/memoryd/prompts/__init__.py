"""Prompts are reviewed files: `prompts/<name>.md`, each with a small header.

A prompt file starts with an HTML comment holding `name`, `version` and `variables` (the
`{{placeholders}}` its text uses), so the file still reads as plain Markdown. The header is
checked when memoryd starts: the name matches the file, the declared variables are exactly the
placeholders used, and rendering refuses a missing or unexpected variable. `name@version` goes
into logs and commit trailers, so a change of behaviour can be traced to a change of prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from memoryd.errors import MemorydError

_HEADER = re.compile(r"\A<!--\n(?P<header>.*?)\n-->\n", re.DOTALL)
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
PROMPT_NAMES = (
    "extract-system",
    "extract-user",
    "extract-sections",
    "extract-section",
    "summary-system",
    "summary-user",
    "consolidate-system",
    "consolidate-user",
)


class PromptError(MemorydError):
    """A prompt file is missing or malformed (a packaging or editing mistake)."""


@dataclass(frozen=True)
class Prompt:
    name: str
    version: int
    variables: frozenset[str]
    text: str

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def render(self, **values: str) -> str:
        """Fill the placeholders. Raise PromptError when a variable is missing or unexpected."""
        given = set(values)
        if given != self.variables:
            missing = sorted(self.variables - given)
            extra = sorted(given - self.variables)
            raise PromptError(f"prompt {self.ref}: missing {missing}, unexpected {extra}")
        # One pass, so a value that happens to contain "{{x}}" is never expanded in turn.
        return _PLACEHOLDER.sub(lambda match: values[match.group(1)], self.text)


def parse_prompt(name: str, source: str) -> Prompt:
    """Given a prompt file's text, return the Prompt. Raise PromptError if the header is off."""
    match = _HEADER.match(source)
    if match is None:
        raise PromptError(f"prompt {name}: missing the <!-- name/version/variables --> header")
    fields: dict[str, str] = {}
    for line in match.group("header").splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    if fields.get("name") != name:
        raise PromptError(f"prompt {name}: header names {fields.get('name')!r}")
    try:
        version = int(fields.get("version", ""))
    except ValueError:
        raise PromptError(f"prompt {name}: version must be a whole number") from None
    declared = frozenset(v.strip() for v in fields.get("variables", "").split(",") if v.strip())
    text = source[match.end() :]
    used = frozenset(_PLACEHOLDER.findall(text))
    if declared != used:
        raise PromptError(
            f"prompt {name}: declares {sorted(declared)} but uses {sorted(used)} as placeholders"
        )
    return Prompt(name=name, version=version, variables=declared, text=text)


@cache
def load_prompt(name: str) -> Prompt:
    """Load a packaged prompt by name. Raise PromptError if it is missing or malformed."""
    try:
        source = resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"prompt {name}: file {name}.md is not installed") from None
    return parse_prompt(name, source)


def check_prompts(names: tuple[str, ...] = PROMPT_NAMES) -> list[str]:
    """Load every prompt; return their `name@version` refs. Raise PromptError on a bad one."""
    return [load_prompt(name).ref for name in names]
