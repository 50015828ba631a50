"""Paperclip: a `memoryd` skill its agents read.

A Paperclip skill is a folder holding `SKILL.md`, YAML front matter (`name`, `description`)
then Markdown instructions; Paperclip lists the skills to its agents by name and description
and loads a skill's body when the task calls for it. `connect` writes `skills/memoryd/SKILL.md`
under the project (`--scope project`, the folder a company's skills are imported from) or under
`$PAPERCLIP_HOME` (default `~/.paperclip`). Its body is memoryd's marked block, so a skill of
the same name that someone else wrote is refused, never overwritten, and `disconnect` removes
only the file it wrote.
"""

from __future__ import annotations

from pathlib import Path

from memoryd.connect.files import FileEdit, has_block, read_text, with_block
from memoryd.connect.target import SERVER_NAME, Target
from memoryd.errors import AgentConfigError

SKILL_NAME = "memoryd"


def skill_path(target: Target) -> Path:
    if target.scope == "project":
        root = target.project
    else:
        configured = target.environ.get("PAPERCLIP_HOME")
        root = Path(configured) if configured else target.home / ".paperclip"
    return root / "skills" / SKILL_NAME / "SKILL.md"


def plan(target: Target, *, connect: bool) -> list[FileEdit]:
    """The edit that connects memoryd to Paperclip (or, `connect=False`, disconnects it)."""
    path = skill_path(target)
    before = read_text(path)
    if before is not None and not has_block(before):
        raise AgentConfigError(path, "is a skill memoryd did not write; it is not replaced")
    if not connect:
        return [FileEdit(path, before, None)]
    front_matter = (
        "---\n"
        f"name: {SKILL_NAME}\n"
        "description: Long-term memory of the user, the people, projects and your own skills. "
        "Use at the start of every heartbeat run, and before asking something the user may "
        "have said before.\n"
        "---\n\n"
    )
    return [FileEdit(path, before, with_block(front_matter, _body(target)))]


def _body(target: Target) -> str:
    return (
        "# memoryd\n"
        "\n"
        "1. At the start of a run, load your memory:\n"
        f"   `{target.context_command('plain')}`\n"
        "   (for a routine, add `--routine NAME`). Read all of it before you start.\n"
        "2. To look something up, search it (JSON hits with the file and line of each):\n"
        f"   `{_search_command(target)}`\n"
        f"3. With MCP, the `{SERVER_NAME}` server's tools do the same: `context`, `search`, "
        "`get_entity`, and `remember` to keep something for later.\n"
    )


def _search_command(target: Target) -> str:
    base = target.context_command("plain").split(" context ", 1)[0]
    return f'{base} search "WORDS" --json --agent {target.agent}'
