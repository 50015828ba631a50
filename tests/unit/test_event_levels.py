"""Every event the code logs by a literal name is in docs/events.md, at the level it is logged."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEVELS = ("debug", "info", "warning", "error", "critical")
ROW = re.compile(r"^\|\s*(?P<names>`[^|]*`)\s*\|\s*(?P<level>[^|]*)\|")


def documented_levels(text: str) -> dict[str, set[str]]:
    """Event name -> the levels its table row allows ("info / warning" rows allow both)."""
    table: dict[str, set[str]] = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        levels = {word for word in re.findall(r"[a-z]+", match["level"]) if word in LEVELS}
        for name in re.findall(r"`([a-z0-9_]+(?:\.[a-z0-9_<>]+)+)`", match["names"]):
            table.setdefault(name, set()).update(levels)
    return table


def logged_events(source: str) -> list[tuple[str, str, int]]:
    """(event, level, line) of each `log.<level>("event", ...)` call with a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Call):
            receiver = receiver.func
        named = isinstance(receiver, ast.Name) and receiver.id.lstrip("_") in ("log", "logger")
        if not named or node.func.attr not in LEVELS or not node.args:
            continue
        first = node.args[0]
        name = first.value if isinstance(first, ast.Constant) else None
        if isinstance(name, str) and re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", name):
            found.append((name, node.func.attr, node.lineno))
    return found


def test_the_table_parser_reads_single_and_paired_rows() -> None:
    text = (
        "| event | level | fields | when |\n|---|---|---|---|\n"
        "| `a.one` | error | `x` | y |\n"
        "| `b.up` / `b.down` | info / warning | `x` | y |\n"
    )
    assert documented_levels(text) == {
        "a.one": {"error"},
        "b.up": {"info", "warning"},
        "b.down": {"info", "warning"},
    }
    calls = logged_events('log.error("a.one", x=1)\n_logger().info("b.up")\nprint("c.d")\n')
    assert calls == [("a.one", "error", 1), ("b.up", "info", 2)]


def test_every_logged_event_is_documented_at_its_level() -> None:
    table = documented_levels((ROOT / "docs" / "events.md").read_text(encoding="utf-8"))
    wrong = []
    seen = 0
    for path in sorted((ROOT / "src" / "memoryd").rglob("*.py")):
        for event, level, line in logged_events(path.read_text(encoding="utf-8")):
            seen += 1
            where = f"{path.relative_to(ROOT)}:{line}"
            if event not in table:
                wrong.append(f"{where}: {event} ({level}) is not in docs/events.md")
            elif level not in table[event]:
                wrong.append(f"{where}: {event} is logged at {level}, documented {table[event]}")
    assert seen > 100  # the scan found the code's events, not nothing
    assert wrong == []
