"""Every `jq` recipe in the docs runs, as written, on a journal captured from real runs.

The recipes are found, not listed: every paragraph of a shell block, and every inline code span,
of README.md and docs/*.md that pipes into `jq`. Each is run by bash with the real `jq`, with
`journalctl` replaced by a function that prints a journal captured from real `memoryd` processes
against the fake Anthropic server (tests/support/journal.py), JSON lines and plain lines mixed as
in a real journal. Each must exit 0, write nothing to stderr, and give what the journal holds,
as computed here from the same lines; a recipe without an expectation below fails the test, so
a new recipe comes with one. Skipped only when jq is not installed.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.check_online import KEY, MODEL, REWRITE_MODEL, answer
from tests.support.journal import Journal, capture_journal

pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"```(?:sh|bash|console)\n(.*?)```", re.DOTALL)
INLINE_CODE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
PIPED_TO_JQ = re.compile(r"\|\s*jq\s")


@dataclass(frozen=True)
class Recipe:
    document: str
    title: str  # its first comment line, or the command itself
    script: str


def find_recipes() -> list[Recipe]:
    recipes: list[Recipe] = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        outside_blocks = SHELL_BLOCK.sub("", text)
        for block in SHELL_BLOCK.findall(text):
            for paragraph in block.split("\n\n"):
                if PIPED_TO_JQ.search(paragraph):
                    first = paragraph.strip().splitlines()[0]
                    title = first.lstrip("# ").strip() if first.startswith("#") else first
                    recipes.append(Recipe(document.name, title, paragraph.strip()))
        for span in INLINE_CODE.findall(outside_blocks):
            if PIPED_TO_JQ.search(span) and span.lstrip().startswith("journalctl"):
                command = " ".join(span.split())
                recipes.append(Recipe(document.name, command, command))
    return recipes


def run_recipe(recipe: Recipe, journal: Journal) -> subprocess.CompletedProcess[str]:
    script = recipe.script.replace("RUN_ID", heartbeat_run(journal))
    return subprocess.run(
        [
            "bash",
            "-c",
            'set -euo pipefail\njournalctl() { cat "$JOURNAL"; }  # -u, -f, --since: all here\n'
            + script,
        ],
        env={"PATH": os.environ["PATH"], "JOURNAL": str(journal.path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def heartbeat_run(journal: Journal) -> str:
    """The run id of the heartbeat that filed the fact (the first one)."""
    return str(journal.named("heartbeat.finished")[0]["run_id"])


def json_values(text: str) -> list[object]:
    """The JSON values printed one after another (pretty-printed or compact)."""
    decoder = json.JSONDecoder()
    values, position = [], 0
    while (position := skip_space(text, position)) < len(text):
        value, position = decoder.raw_decode(text, position)
        values.append(value)
    return values


def skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def lines_as_json(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


# --- What each recipe must print, from the journal's own lines.


def follow_everything(stdout: str, journal: Journal) -> None:
    text = journal.path.read_text(encoding="utf-8")
    expected = [json.loads(line) if line.startswith("{") else line for line in text.splitlines()]
    assert json_values(stdout) == expected
    assert journal.plain[0] in expected


def warnings_and_errors(stdout: str, journal: Journal) -> None:
    wanted = [line for line in journal.events if line["level"] in ("warning", "error")]
    assert len(wanted) >= 5
    assert lines_as_json(stdout) == wanted


def one_line_per_heartbeat(stdout: str, journal: Journal) -> None:
    finished = journal.named("heartbeat.finished")
    rows = [row.split("\t") for row in stdout.splitlines()]
    assert len(rows) == len(finished) >= 5
    for row, event in zip(rows, finished, strict=True):
        assert len(row) == 12
        expected = [event["timestamp"], event["outcome"], event["facts_added"]]
        assert row[:3] == [str(value) for value in expected]
        assert row[10] == (str(event["commit"]) if event["commit"] is not None else "")
    assert rows[0][1] == "ok"  # the heartbeat that filed the fact


def spend_today(stdout: str, journal: Journal) -> None:
    paid = journal.named("heartbeat.finished") + journal.named("rewrite.finished")
    total = sum(float(str(event.get("cost_usd") or 0)) for event in paid)
    assert total > 0
    assert math.isclose(float(stdout), total, rel_tol=1e-9)


def budget_reached(stdout: str, journal: Journal) -> None:
    (line,) = lines_as_json(stdout)
    assert set(line) == {"timestamp", "daily_usd", "heartbeat_usd", "spent_today_usd"}
    assert line["daily_usd"] == 0.000001
    assert line == {key: journal.named("budget.exhausted")[0][key] for key in line}


def quarantined(stdout: str, journal: Journal) -> None:
    (line,) = lines_as_json(stdout)
    assert (line["agent"], line["failures"]) == ("ops", 3)
    assert "refused" in str(line["error"])
    assert set(line) == {"timestamp", "agent", "session", "day", "failures", "error"}


def llm_unusable(stdout: str, journal: Journal) -> None:
    (line,) = lines_as_json(stdout)
    assert (line["kind"], line["status"], line["error_type"]) == (
        "billing",
        400,
        "invalid_request_error",
    )
    assert str(line["remedy"]) and str(line["message"]).startswith("Your credit balance")


def llm_trouble(stdout: str, journal: Journal) -> None:
    lines = lines_as_json(stdout)
    wanted = journal.named("llm.retry") + journal.named("llm.failed")
    assert len(lines) == len(wanted) >= 3
    assert {line["event"] for line in lines} <= {"llm.retry", "llm.failed"}
    assert all(line["status"] in (400, None) for line in lines)


def job_failed(stdout: str, journal: Journal) -> None:
    # Only the daemon logs `job.failed`; these one-shot runs never do. jq still compiles the
    # recipe's filter and reads every line, so a syntax error or a plain line would fail it.
    assert journal.named("job.failed") == []
    assert stdout == ""


def one_run(stdout: str, journal: Journal) -> None:
    run = heartbeat_run(journal)
    lines = lines_as_json(stdout)
    assert lines == [line for line in journal.events if line.get("run_id") == run]
    assert {"heartbeat.started", "heartbeat.finished"} <= {line["event"] for line in lines}


def state_events(stdout: str, journal: Journal) -> None:
    lines = lines_as_json(stdout)
    assert [line["event"] for line in lines] == ["state.discarded", "state.rebuilt"]


EXPECTED: dict[str, Callable[[str, Journal], None]] = {
    "Follow everything, JSON pretty-printed, plain lines as they are": follow_everything,
    "Warnings and errors only": warnings_and_errors,
    "One line per heartbeat: time, outcome, what was filed, tokens, cost, commit, duration": (
        one_line_per_heartbeat
    ),
    "Spend today, summed over every paid job: heartbeats and rewrites (their batches and": (
        spend_today
    ),
    "The daily budget was reached (logged once per day)": budget_reached,
    "Chunks given up on after 3 failed heartbeats (see `memoryd retry`)": quarantined,
    "The LLM cannot be used (key, permission, model, credit, size limit): what to fix, and the": (
        llm_unusable
    ),
    "Trouble reaching the model: retries and final failures": llm_trouble,
    "A job that failed unexpectedly (the daemon carries on), with its traceback's frames": (
        job_failed
    ),
    "Everything one run did": one_run,
    "journalctl -u memoryd -o cat | jq -cR 'fromjson? | select(.event | startswith(\"state.\"))'": (
        state_events
    ),
}


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journal]:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (.ci/run installs it)")
    with FakeAnthropicServer(handler=answer, api_key=KEY, models={MODEL, REWRITE_MODEL}) as fake:
        yield capture_journal(tmp_path_factory.mktemp("journal"), fake)


def test_every_recipe_in_the_docs_has_an_expected_result() -> None:
    titles = [recipe.title for recipe in find_recipes()]
    assert len(titles) == len(set(titles)), titles
    assert sorted(titles) == sorted(EXPECTED), "a recipe was added, changed or removed"


@pytest.mark.parametrize("recipe", find_recipes(), ids=lambda recipe: recipe.title[:40])
def test_the_recipe_runs_on_a_journal_of_real_runs(recipe: Recipe, journal: Journal) -> None:
    result = run_recipe(recipe, journal)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    EXPECTED[recipe.title](result.stdout, journal)
