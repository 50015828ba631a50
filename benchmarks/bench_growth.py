"""Growth benchmark: "fifty runs later", does the store stay readable or grow without end?

What it drives: 12 simulated weeks of one agent's work, through the real heartbeat and the real
weekly rewrite (the real SDK over HTTP to the fake Anthropic server, a real git store, a real
state database), the clock advanced by the benchmark. Each working day (5 a week) one
conversation is read by a heartbeat; each Sunday the weekly rewrite runs.

The scripted model behaves as a real one does over many runs: in each conversation the user
restates two of a fixed set of 10 working rules, each time in other words, which the model files
as tacit lines; the agent re-learns two of 6 tips under loosely named topics; facts about 5
people are restated in varied words, and one new fact a day is filed about the project. Asked to
consolidate, the scripted model merges every variant of a rule (or tip) into one line and
keeps what it does not know as it is.

What it reports, per week after the rewrite (and, in brackets, just before it: what agents
read at the end of the week): `MEMORY.md` (bullets, lines, characters), its duplicate rate
(bullets restating a rule another bullet already states, over all bullets), skills (index
lines, tips in topic files), facts, and summaries (total characters). Bounded
means the figures level off once every rule and tip has been seen; linear means they keep
growing with the number of runs. The store is built under `$TMPDIR/memoryd-bench/growth/`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.harness import Workspace, turn
from tests.support.rewrite_run import run as run_rewrite
from tests.support.rewrite_run import summarizer

from memoryd.gitrepo._repository import find_work_tree
from memoryd.logs import configure_logging
from memoryd.store.text import normalize_statement

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "growth"
WEEKS = 12
FIRST_MONDAY = date(2026, 1, 5)

# Ten working rules, each in three wordings; prefixes and suffixes give 48 ways to say each.
RULES: tuple[tuple[str, ...], ...] = (
    (
        "Never takes meetings before 10:00",
        "Does not do anything before 10:00",
        "Keeps the mornings until 10:00 free of calls",
    ),
    (
        "Does no deploys on Fridays",
        "Friday is a no-deploy day",
        "Will not ship releases at the end of the week on Friday",
    ),
    (
        "Pins every dependency to an exact version",
        "Wants dependencies locked to exact versions",
        "No floating version ranges for dependencies",
    ),
    (
        "Prefers terse bullet summaries over prose",
        "Wants summaries as short bullets, not paragraphs",
        "Likes brief bulleted recaps rather than long text",
    ),
    (
        "Reviews every pull request within one day",
        "Pull requests get reviewed inside 24 hours",
        "Expects review turnaround on pull requests under a day",
    ),
    (
        "Writes commit messages that say why",
        "Commit messages must explain the reason for the change",
        "Wants the why in each commit message",
    ),
    (
        "Runs the full test suite before merging",
        "Never merges without the whole test suite green",
        "All tests must pass before a merge",
    ),
    (
        "Uses metric units in every document",
        "Documents are written with metric units only",
        "Prefers kilometres and kilograms over imperial units",
    ),
    (
        "Answers email in two batches a day",
        "Checks email only twice daily",
        "Handles the inbox at two fixed times each day",
    ),
    (
        "Keeps meeting notes in the project wiki",
        "Meeting notes belong in the wiki of the project",
        "Files every meeting's notes on the project wiki",
    ),
)
PREFIXES = ("", "As a rule, ", "The user says: ", "Reminder: ")
SUFFIXES = ("", ", firmly", ", every week", ", as agreed")

# Six skill tips, each in three wordings, filed under loosely named topics.
TIPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("deploy", ("Run make check before the deploy script", "make check first, then deploy")),
    ("deploy script", ("The deploy script needs the VPN up", "Bring the VPN up before deploys")),
    ("postgres", ("Vacuum runs nightly at 02:00", "Nightly vacuum is scheduled for 02:00")),
    ("postgres backups", ("Backups land in /srv/backups/pg", "pg backups are in /srv/backups/pg")),
    ("ci", ("The CI cache key includes the lockfile hash", "CI caches by lockfile hash")),
    ("ci runners", ("Self-hosted runners are labelled linux-big", "Use the linux-big runners")),
)
PEOPLE = ("Dana Smith", "Eli Brown", "Farah Khan", "Gus Lee", "Hana Ito")
PERSON_FACTS = ("Leads the data team", "Is the lead of the data team", "Heads the data team")

_RULE_LINE = re.compile(r"rule: (.+)$", re.MULTILINE)
_TIP_LINE = re.compile(r"tip: ([^:]+): (.+)$", re.MULTILINE)
_REMEMBER = re.compile(r"remember: (person|project) ([^:]+): (.+)$", re.MULTILINE)
_NUMBERED = re.compile(r"^(t\d+) \[([^\]]*)\] (.+)$", re.MULTILINE)


def _identity() -> dict[str, tuple[str, int]]:
    """Every wording the scripted model may file, mapped to what it means."""
    known: dict[str, tuple[str, int]] = {}
    for number, wordings in enumerate(RULES):
        for wording in wordings:
            for prefix in PREFIXES:
                for suffix in SUFFIXES:
                    known[normalize_statement(prefix + wording + suffix)] = ("rule", number)
    for number, (_topic, wordings) in enumerate(TIPS):
        for wording in wordings:
            known[normalize_statement(wording)] = ("tip", number)
    return known


IDENTITY = _identity()


def _user_text(request: RecordedRequest) -> str:
    content = request.body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def scripted_model(request: RecordedRequest) -> ToolUse:
    """Extraction restates what the conversation says; consolidation merges by meaning."""
    tool = request.body.get("tools", [{}])[0].get("name")
    text = _user_text(request)
    if tool == "write_summary":
        return summarizer(request)
    if tool == "consolidate_skills":
        return ToolUse(_consolidate(text))
    facts = [
        {"entity": {"name": name, "kind": kind}, "fact": fact.strip(), "category": "status"}
        for kind, name, fact in _REMEMBER.findall(text)
    ]
    entities = [{"name": f["entity"]["name"], "kind": f["entity"]["kind"]} for f in facts]
    return ToolUse(
        {
            "facts": facts,
            "entities": [dict(e, significant=True) for e in entities],
            "tacit": [rule.strip() for rule in _RULE_LINE.findall(text)],
            "skills": [
                {"topic": topic.strip(), "tip": tip.strip(), "routine": False}
                for topic, tip in _TIP_LINE.findall(text)
            ],
        }
    )


def _consolidate(text: str) -> dict[str, Any]:
    groups: dict[object, tuple[str, str, list[str]]] = {}
    for number, topic, tip in _NUMBERED.findall(text):
        meaning = IDENTITY.get(normalize_statement(tip))
        if meaning is None:
            key: object = ("own", tip)
            line, name = tip, topic
        elif meaning[0] == "rule":
            key, line, name = meaning, RULES[meaning[1]][0], topic
        else:
            key, line, name = meaning, TIPS[meaning[1]][1][0], TIPS[meaning[1]][0]
        groups.setdefault(key, (name, line, []))[2].append(number)
    topics: dict[str, list[dict[str, Any]]] = {}
    for name, line, numbers in groups.values():
        topics.setdefault(name, []).append({"text": line, "from": numbers})
    return {"topics": [{"topic": name, "tips": tips} for name, tips in topics.items()]}


def conversation(week: int, day: int) -> list[dict[str, str]]:
    """One day's conversation: two rules, two tips and three facts, in that day's words."""
    serial = week * 5 + day
    when = datetime.combine(FIRST_MONDAY + timedelta(weeks=week, days=day), datetime.min.time())
    stamp = when.replace(hour=10, tzinfo=UTC).isoformat()
    lines = []
    for offset in (0, 1):
        wordings = RULES[(serial * 3 + offset) % len(RULES)]
        pick = random.Random(serial * 31 + offset)  # the same words on every run
        said = pick.choice(PREFIXES) + pick.choice(wordings) + pick.choice(SUFFIXES)
        lines.append(f"rule: {said}")
        topic, tips = TIPS[(serial * 2 + offset) % len(TIPS)]
        lines.append(f"tip: {topic}: {tips[(serial + week) % len(tips)]}")
    person = PEOPLE[serial % len(PEOPLE)]
    lines.append(f"remember: person {person}: {PERSON_FACTS[serial % len(PERSON_FACTS)]}")
    lines.append(f"remember: project Atlas: Build {serial + 1} shipped on {when.date()}")
    return [
        turn("user", "\n".join(lines), stamp),
        turn("assistant", "Noted; I will keep all of that in mind.", stamp),
    ]


def measure(ws: Workspace) -> dict[str, Any]:
    tacit = ws.read("MEMORY.md")
    bullets = [line[2:] for line in tacit.splitlines() if line.startswith("- ")]
    meanings = [IDENTITY.get(normalize_statement(b), ("own", b)) for b in bullets]
    skills = ws.store / "agents" / "ops"
    index = (skills / "skills-index.md").read_text(encoding="utf-8").splitlines()
    tips = sum(
        1
        for path in skills.glob("*.md")
        if path.name != "skills-index.md"
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("- ")
    )
    summaries = list((ws.store / "life").rglob("summary.md"))
    facts = sum(
        len(json.loads(p.read_text("utf-8"))) for p in (ws.store / "life").rglob("items.json")
    )
    return {
        "tacit_bullets": len(bullets),
        "tacit_lines": len(tacit.splitlines()),
        "tacit_chars": len(tacit),
        "tacit_duplicate_rate": (1 - len(set(meanings)) / len(bullets)) if bullets else 0.0,
        "index_lines": len(index),
        "topic_tips": tips,
        "facts": facts,
        "summary_chars": sum(len(p.read_text(encoding="utf-8")) for p in summaries),
    }


def run(weeks: int) -> list[dict[str, Any]]:
    root = DATA / "run"
    shutil.rmtree(root, ignore_errors=True)
    ws = Workspace(root)
    ws.init()
    settings = ws.settings()
    rows = []
    with FakeAnthropicServer(handler=scripted_model) as server:
        for week in range(weeks):
            monday = FIRST_MONDAY + timedelta(weeks=week)
            for day in range(5):
                ws.write_log(f"w{week:02d}d{day}.jsonl", conversation(week, day))
                ws.now = datetime.combine(monday + timedelta(days=day), datetime.min.time())
                ws.now = ws.now.replace(hour=18, tzinfo=UTC)
                ws.heartbeat(settings, server.base_url)
            ws.now = datetime.combine(monday + timedelta(days=6), datetime.min.time()).replace(
                hour=3, tzinfo=UTC
            )
            peak = measure(ws)  # what agents read at the end of the week, before the rewrite
            report = run_rewrite(ws, settings, server.base_url)
            row = {"week": week + 1, "runs": (week + 1) * 6, **measure(ws)}
            row["tacit_bullets_before_rewrite"] = peak["tacit_bullets"]
            row["duplicate_rate_before_rewrite"] = peak["tacit_duplicate_rate"]
            row["rewrite_files"] = len(report.consolidated_files)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| week | runs | MEMORY.md bullets (before rewrite) | lines | chars "
        "| duplicate rate (before rewrite) | index lines | topic tips | facts | summary chars |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['week']} | {row['runs']} | {row['tacit_bullets']} "
            f"({row['tacit_bullets_before_rewrite']}) | {row['tacit_lines']} "
            f"| {row['tacit_chars']} | {row['tacit_duplicate_rate']:.0%} "
            f"({row['duplicate_rate_before_rewrite']:.0%}) | {row['index_lines']} "
            f"| {row['topic_tips']} | {row['facts']} | {row['summary_chars']} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks growth")
    parser.add_argument("--weeks", type=int, default=WEEKS)
    options = parser.parse_args(argv)
    enclosing = find_work_tree(DATA)
    if enclosing is not None:
        print(f"{DATA} is inside the git work tree {enclosing}; set TMPDIR", file=sys.stderr)
        return 2
    configure_logging("json", "warning")  # the table is the output
    rows = run(options.weeks)
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
