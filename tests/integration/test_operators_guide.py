"""docs/operators-guide.md stays true: its log recipes run on real log lines, its names exist.

The `journalctl … | jq …` recipes of the guide's section 4 are run as written by bash, with
`journalctl` replaced by a function that prints a journal captured from a real `memoryd`
process (init, then a heartbeat with the offline markers provider) plus a plain-text line, as
`memoryd check` writes into the same journal. Skipped only when jq is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.harness import STABLE_EVENTS

from memoryd import __version__
from memoryd.cli import build_parser

REPOSITORY = Path(__file__).resolve().parents[2]
GUIDE = REPOSITORY / "docs" / "operators-guide.md"
SOURCE = REPOSITORY / "src" / "memoryd"

PLAIN_LINE = "/etc/memoryd/memoryd.toml: configuration OK"


def guide_section(title_prefix: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title_prefix}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def memoryd(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "--log-format", "json", *args],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """A journal as `journalctl -o cat` prints it, from a real init and heartbeat."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "session.jsonl").write_text(
        json.dumps(
            {
                "role": "user",
                "content": "remember: person Jane Doe: Joined Acme as CTO",
                "timestamp": "2026-03-10T09:00:00Z",
            }
        )
        + "\n"
    )
    (tmp_path / "memoryd.toml").write_text(
        '[store]\npath = "store"\n[state]\npath = "state"\n[llm]\nprovider = "markers"\n'
        '[backfill]\nsince = "all"\n[budget]\ndaily_usd = 0\n'
        '[[agents]]\nname = "ops"\n  [[agents.sources]]\n  format = "jsonl"\n  path = "logs"\n'
    )
    lines = [PLAIN_LINE]
    for command in ("init", "heartbeat"):
        result = memoryd("--config", "memoryd.toml", command, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        lines.extend(result.stderr.splitlines())
    path = tmp_path / "journal.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def finished_event(journal: Path) -> dict[str, object]:
    for line in journal.read_text().splitlines():
        if line.startswith("{") and json.loads(line)["event"] == "heartbeat.finished":
            event: dict[str, object] = json.loads(line)
            return event
    raise AssertionError("no heartbeat.finished in the journal")


@pytest.mark.slow
def test_log_recipes_run_on_a_real_journal(journal: Path) -> None:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    blocks = re.findall(r"```sh\n(.*?)```", guide_section("4."), re.DOTALL)
    assert len(blocks) == 1, "section 4 has one block of recipes"
    script = (
        "set -euo pipefail\n"
        'journalctl() { cat "$JOURNAL"; }  # the options (-u, -f, --since) do not matter here\n'
        + blocks[0]
    )
    result = subprocess.run(
        ["bash", "-c", script],
        env={"PATH": os.environ["PATH"], "JOURNAL": str(journal)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    event = finished_event(journal)
    # The follow recipe keeps plain lines as strings instead of failing on them.
    assert json.dumps(PLAIN_LINE) in result.stdout
    # The one-line-per-heartbeat recipe shows the heartbeat's outcome and commit.
    rows = [line for line in result.stdout.splitlines() if "\t" in line]
    row = next(line for line in rows if str(event["commit"]) in line)
    assert row.split("\t")[:3] == [str(event["timestamp"]), "ok", str(event["facts_added"])]


def test_every_event_the_guide_names_is_stable_or_logged() -> None:
    code = "\n".join(p.read_text(encoding="utf-8") for p in SOURCE.rglob("*.py"))
    # The first cell of each row of the events table, e.g. "`llm.retry` / `llm.failed`".
    cells = re.findall(r"^\| (`[^|]*`) \|", guide_section("4."), re.MULTILINE)
    named = {name for cell in cells for name in re.findall(r"`([a-z_]+\.[a-z_]+)`", cell)}
    assert {"heartbeat.finished", "budget.exhausted", "chunk.quarantined", "job.failed"} <= named
    unknown = {name for name in named if name not in STABLE_EVENTS and f'"{name}"' not in code}
    assert not unknown, f"the guide names events nothing logs: {sorted(unknown)}"


def test_every_unit_file_the_guide_names_exists() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    named: set[str] = set()
    for match in re.findall(r"systemd/[\w@./{},-]+", text):
        reference = match.rstrip(".,")
        braces = re.fullmatch(r"(.*)\{(.*)\}(.*)", reference)
        if braces:
            head, options, tail = braces.groups()
            named.update(f"{head}{option}{tail}" for option in options.split(","))
        else:
            named.add(reference)
    files = {name for name in named if not name.endswith("/")}
    assert "systemd/memoryd.service" in files
    missing = sorted(name for name in files if not (REPOSITORY / name).is_file())
    assert not missing, missing


def test_the_spend_recipe_sums_every_paid_job(journal: Path, tmp_path: Path) -> None:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    block = re.findall(r"```sh\n(.*?)```", guide_section("4."), re.DOTALL)[0]
    recipe = next(part for part in block.split("\n\n") if part.startswith("# Spend today"))
    # The captured heartbeat's own line, and a rewrite's, each given a price: markers cost 0.
    heartbeat = {**finished_event(journal), "cost_usd": 0.25}
    rewrite = {"event": "rewrite.finished", "level": "info", "run_id": "r", "cost_usd": 0.5}
    lines = [PLAIN_LINE, json.dumps(heartbeat), json.dumps(rewrite)]
    (tmp_path / "priced.txt").write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        ["bash", "-c", 'set -euo pipefail\njournalctl() { cat "$JOURNAL"; }\n' + recipe],
        env={"PATH": os.environ["PATH"], "JOURNAL": str(tmp_path / "priced.txt")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == 0.75


def install_blocks() -> list[str]:
    """The shell blocks of section 2, "Install on a VPS"."""
    return re.findall(r"```sh\n(.*?)```", guide_section("2."), re.DOTALL)


def install_commands() -> list[str]:
    """Every command line of section 2's shell blocks, continuation lines joined, comments and
    leading indentation dropped."""
    text = "\n".join(install_blocks()).replace("\\\n", " ")
    lines = (line.split(" #")[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_install_works_from_a_root_shell_without_sudo() -> None:
    commands = install_commands()
    assert commands, "section 2 has shell blocks"
    with_sudo = [line for line in commands if re.search(r"(^|[\s;&|(])sudo(edit)?\s", line)]
    assert not with_sudo, f"a minimal Debian has no sudo: {with_sudo}"
    # The service user's steps name it with runuser, which every Debian has.
    assert any(line.startswith("runuser -u memoryd -- ") for line in commands)
    assert "sudo -u memoryd" in guide_section("2.")  # named once, as the alternative


def test_the_install_names_a_system_python_and_checks_it_as_the_service_user() -> None:
    commands = install_commands()
    venvs = [line for line in commands if " -m venv " in line]
    assert venvs == ["/usr/bin/python3 -m venv /opt/memoryd"]
    # pipx for the whole system (2.9's user service runs the user's own pipx and Python).
    pipx = [line for line in commands if line.startswith("PIPX_HOME=")]
    assert pipx and all("--python /usr/bin/python3" in line for line in pipx)
    # One verification line run as the service user, and the helper that says why it fails.
    assert "runuser -u memoryd -- /usr/local/bin/memoryd --version" in commands
    assert "/usr/local/bin/memoryd check --service-user memoryd" in commands
    assert f"prints: memoryd {__version__}" in guide_section("2.")


def test_every_memoryd_command_of_the_install_parses() -> None:
    parser = build_parser()
    checked = 0
    for line in install_commands():
        words = re.sub(r"^runuser -u \S+ -- ", "", line).split()
        if not words or not words[0].endswith("memoryd") or words[0] == "memoryd-as-service":
            continue
        arguments = [word for word in words[1:] if word != "COMMAND"]
        if "COMMAND" in words or "..." in arguments:
            continue
        try:
            parser.parse_args(arguments)
        except SystemExit as stop:  # `--version` prints and exits 0
            if stop.code != 0:
                pytest.fail(f"{line!r} does not parse: exit {stop.code}")
        checked += 1
    assert checked >= 3
