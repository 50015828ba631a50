"""Reading the memory as an operator and an agent do: real `memoryd` processes for heartbeat,
`context`, `search`, `forget` and `supersede` over a real store, state and search index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.cli import write_config
from tests.support.reading import JANE, git, memoryd, write_transcript

from memoryd.errors import EXIT_OK, EXIT_USAGE

pytestmark = pytest.mark.slow


@pytest.fixture
def filed(tmp_path: Path) -> Path:
    """A store after `init` and one heartbeat over a small transcript (markers provider)."""
    write_config(tmp_path)
    write_transcript(tmp_path)
    assert memoryd(tmp_path, "init").returncode == EXIT_OK
    result = memoryd(tmp_path, "heartbeat")
    assert result.returncode == EXIT_OK, result.stderr
    return tmp_path


def test_context_is_the_agents_bundle_stable_and_read_only(filed: Path) -> None:
    head = git(filed, "rev-parse", "HEAD")
    first = memoryd(filed, "context", "--agent", "ops")
    assert first.returncode == EXIT_OK, first.stderr
    text = first.stdout
    assert text.startswith("# Memory for ops, ")
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == "## How the user works (MEMORY.md)"
    assert sections[1] == "## Skills of ops (agents/ops/skills-index.md)"
    assert sections[2] == f"## Jane Doe (people/jane-doe) ({JANE}/summary.md)"
    assert sections[3].startswith("## Today, ")
    assert "- Prefers terse answers" in text
    assert "[deploy](deploy.md): run make deploy-staging first" in text
    assert "- Joined Acme as CTO [jane-doe-001]" in text
    assert "Met Jane about the launch" in text
    assert memoryd(filed, "context", "--agent", "ops").stdout == text  # stable
    assert git(filed, "rev-parse", "HEAD") == head  # nothing committed
    assert git(filed, "status", "--porcelain") == ""  # nothing written to the store
    queued = (filed / "state" / "queue" / "reads.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["fact"] for line in queued} == {"jane-doe-001", "jane-doe-002"}

    small = memoryd(filed, "context", "--agent", "ops", "--budget", "120").stdout
    assert small.startswith("# Memory for ops, ") and "Prefers terse answers" in small
    assert "Left out to fit the budget:" in small
    assert len(small) < len(text)


def test_search_finds_facts_and_lines_with_id_ref_path_and_line(filed: Path) -> None:
    result = memoryd(filed, "search", "Lisbon", "--json", "--agent", "ops")
    assert result.returncode == EXIT_OK, result.stderr
    hits = json.loads(result.stdout)
    assert hits[0]["kind"] == "fact" and hits[0]["id"] == "jane-doe-002"
    assert hits[0]["ref"] == "people/jane-doe" and hits[0]["tier"] == "hot"
    items = (filed / "store" / JANE / "items.json").read_text(encoding="utf-8").splitlines()
    assert hits[0]["path"] == f"{JANE}/items.json"
    assert '"id": "jane-doe-002"' in items[hits[0]["line"] - 1]
    assert hits[0]["entity"] == "Jane Doe" and hits[0]["status"] == "active"
    facts = json.loads((filed / "store" / JANE / "items.json").read_text(encoding="utf-8"))
    assert hits[0]["date"] == facts[1]["timestamp"]
    # The summary line citing the fact is folded into its hit: one hit per fact.
    assert [hit["id"] for hit in hits].count("jane-doe-002") == 1
    assert not any("[jane-doe-002]" in hit["text"] for hit in hits)
    summaries = json.loads(memoryd(filed, "search", "Lisbon", "--json", "--kind", "summary").stdout)
    assert summaries and summaries[0]["path"] == f"{JANE}/summary.md"

    by_name = json.loads(memoryd(filed, "search", "jane", "--json", "--kind", "fact").stdout)
    assert {hit["id"] for hit in by_name} == {"jane-doe-001", "jane-doe-002"}
    notes = json.loads(memoryd(filed, "search", "launch", "--json", "--kind", "note").stdout)
    assert [hit["kind"] for hit in notes] == ["note"]
    plain = memoryd(filed, "search", "deploy staging").stdout
    assert "agents/ops/deploy.md:" in plain
    assert memoryd(filed, "search", "nothing-like-this").stdout == "no match\n"


def test_supersede_and_forget_keep_the_fact_and_commit_once_each(filed: Path) -> None:
    commits = len(git(filed, "log", "--format=%s").splitlines())
    result = memoryd(filed, "supersede", "jane-doe-002", "Lives in Porto")
    assert result.returncode == EXIT_OK, result.stderr
    assert "jane-doe-002 superseded by jane-doe-003" in result.stdout
    facts = json.loads((filed / "store" / JANE / "items.json").read_text(encoding="utf-8"))
    old, new = facts[1], facts[2]
    assert (old["status"], old["supersededBy"]) == ("superseded", "jane-doe-003")
    assert (new["fact"], new["status"], new["category"]) == ("Lives in Porto", "active", "context")
    assert (
        git(filed, "log", "-1", "--format=%s").strip() == "supersede: jane-doe-002 by jane-doe-003"
    )
    summary = (filed / "store" / JANE / "summary.md").read_text(encoding="utf-8")
    assert "Lives in Porto [jane-doe-003]" in summary and "Lisbon" not in summary
    events = [json.loads(line)["event"] for line in result.stderr.splitlines()]
    assert "fact.superseded" in events

    lisbon = json.loads(memoryd(filed, "search", "Lisbon", "--json", "--kind", "fact").stdout)
    assert [(h["id"], h["status"], h["tier"]) for h in lisbon] == [
        ("jane-doe-002", "superseded", "inactive")
    ]

    forgot = memoryd(filed, "forget", "jane-doe-001", "--reason", "never true")
    assert forgot.returncode == EXIT_OK, forgot.stderr
    facts = json.loads((filed / "store" / JANE / "items.json").read_text(encoding="utf-8"))
    assert facts[0]["status"] == "retracted"
    assert facts[0]["retraction"]["reason"] == "never true"
    assert git(filed, "log", "-1", "--format=%s").strip() == "forget: retract jane-doe-001"
    assert "jane-doe-001" not in (filed / "store" / JANE / "summary.md").read_text("utf-8")
    assert len(git(filed, "log", "--format=%s").splitlines()) == commits + 2
    assert git(filed, "status", "--porcelain") == ""

    unknown = memoryd(filed, "forget", "nobody-001")
    assert unknown.returncode == EXIT_USAGE and "no fact nobody-001" in unknown.stdout
    again = memoryd(filed, "forget", "jane-doe-001")
    assert again.returncode == EXIT_USAGE and "already retracted" in again.stdout
    # A retracted or superseded fact is still found, marked.
    found = json.loads(memoryd(filed, "search", "Acme CTO", "--json", "--kind", "fact").stdout)
    assert found[0]["status"] == "retracted"


def test_reads_become_access_bumps_in_the_next_heartbeat(filed: Path) -> None:
    memoryd(filed, "search", "Lisbon", "--agent", "ops")
    memoryd(filed, "search", "Lisbon", "--agent", "ops")  # same agent, same day: counted once
    memoryd(filed, "search", "Lisbon", "--agent", "cli")  # another reader: counted too
    result = memoryd(filed, "heartbeat")
    assert result.returncode == EXIT_OK, result.stderr
    assert git(filed, "log", "-1", "--format=%s").strip().endswith("2 accesses")
    facts = json.loads((filed / "store" / JANE / "items.json").read_text(encoding="utf-8"))
    assert facts[1]["accessCount"] == 2
    assert not (filed / "state" / "queue" / "reads.jsonl").exists()
    assert not list((filed / "state" / "queue").glob("reads-claimed-*"))
    again = memoryd(filed, "heartbeat")
    assert "commit none" in again.stdout  # nothing queued: nothing to count


def test_init_runs_the_index_init_commands_once(tmp_path: Path) -> None:
    write_config(tmp_path, "[index]\ninit_commands = [\"sh -c 'echo added >> collection'\"]\n")
    first = memoryd(tmp_path, "init")
    assert first.returncode == EXIT_OK, first.stderr
    assert "index.init_commands: 1 of 1 succeeded" in first.stdout
    assert memoryd(tmp_path, "init").returncode == EXIT_OK
    assert (tmp_path / "store" / "collection").read_text(encoding="utf-8") == "added\n"


def test_context_prints_what_each_hook_takes(filed: Path) -> None:
    plain = memoryd(filed, "context", "--agent", "ops").stdout
    claude = memoryd(filed, "context", "--agent", "ops", "--format", "claude-code")
    assert claude.returncode == EXIT_OK and claude.stdout == plain  # small: nothing to cut
    codex = json.loads(memoryd(filed, "context", "--agent", "ops", "--format", "codex").stdout)
    assert codex == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": plain}
    }
    shown = json.loads(memoryd(filed, "context", "--agent", "ops", "--format", "json").stdout)
    assert shown["text"] == plain and shown["reads"]["queued"] is True
    assert shown["left_out"] == [] and shown["chars"] == len(plain)
    assert memoryd(filed, "context", "--agent", "ops", "--format", "xml").returncode == 2
