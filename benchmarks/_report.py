"""Write one benchmark's section of BENCHMARKS.md, leaving the other sections as they are.

Each benchmark owns the section that starts at its `## <Name>` heading and runs to the next
`## ` heading. Writing replaces that section in place (or appends it), so benchmarks can be run
one at a time and the file keeps the figures each one last measured.
"""

from __future__ import annotations

from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
_TITLE = (
    "# Benchmarks\n\n"
    "Figures measured by `python -m benchmarks`; each section says how it was run.\n"
)


def replace_section(document: str, name: str, body: str) -> str:
    """Return `document` with the `## name` section replaced by `body` (appended if absent)."""
    heading = f"## {name}"
    section = f"{heading}\n\n{body.strip()}\n"
    lines = document.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == heading), None)
    if start is None:
        base = document.rstrip("\n")
        return (base + "\n\n" if base else "") + section
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
        len(lines),
    )
    after = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + after if after else "")


def write_section(name: str, body: str, report: Path = REPORT) -> None:
    """Replace (or add) the `## name` section of the report file."""
    document = report.read_text(encoding="utf-8") if report.exists() else _TITLE
    report.write_text(replace_section(document, name, body), encoding="utf-8")
