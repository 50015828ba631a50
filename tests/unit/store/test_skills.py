"""Agent skills: topic files and index, near-duplicate topics merged, routines, hostile names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.store.skills import (
    InvalidSkillError,
    Topic,
    add_routine_skill,
    add_skill,
    agent_folder,
    match_topic,
)

from .conftest import DirTransaction, MemoryTransaction

SLUG_FILE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\.md$")


def test_a_first_tip_creates_the_topic_file_and_the_index_line(
    tx: DirTransaction, store_root: Path
) -> None:
    outcome = add_skill(
        tx,
        "agents",
        agent="chief-of-staff",
        topic="fail2ban",
        tip="fail2ban-client needs sudo; run it as sudo -n",
    )
    assert outcome.added
    assert outcome.new_topic
    assert outcome.path == "agents/chief-of-staff/fail2ban.md"
    folder = store_root / "agents/chief-of-staff"
    assert (folder / "fail2ban.md").read_text() == (
        "# fail2ban\n\n- fail2ban-client needs sudo; run it as sudo -n\n"
    )
    assert (folder / "skills-index.md").read_text() == (
        "# Skills of chief-of-staff\n\n"
        "One line per topic; the tips are in each topic's file.\n\n"
        "- [fail2ban](fail2ban.md): fail2ban-client needs sudo; run it as sudo -n\n"
    )


def test_tips_are_not_stored_twice(tx: DirTransaction, store_root: Path) -> None:
    add_skill(tx, "agents", agent="ops", topic="Docker", tip="Prune images weekly")
    again = add_skill(tx, "agents", agent="ops", topic="docker", tip="prune images weekly.")
    assert not again.added
    assert (store_root / "agents/ops/docker.md").read_text().count("rune images") == 1


@pytest.mark.parametrize(
    "variant",
    ["Fail2Ban", "fail2ban!", "fail2ban jails", "FAIL2BAN  config tips", "fail-2ban"],
)
def test_near_duplicate_topics_join_the_existing_one(
    tx: DirTransaction, store_root: Path, variant: str
) -> None:
    add_skill(tx, "agents", agent="ops", topic="fail2ban", tip="First tip")
    outcome = add_skill(tx, "agents", agent="ops", topic=variant, tip="Second tip")
    assert outcome.topic == "fail2ban"
    assert not outcome.new_topic
    folder = store_root / "agents/ops"
    assert sorted(p.name for p in folder.iterdir()) == ["fail2ban.md", "skills-index.md"]
    assert (folder / "fail2ban.md").read_text() == "# fail2ban\n\n- First tip\n- Second tip\n"
    index_lines = (folder / "skills-index.md").read_text().splitlines()
    assert sum(line.startswith("- [") for line in index_lines) == 1


def test_a_broader_new_topic_joins_a_narrower_existing_one(
    tx: DirTransaction, store_root: Path
) -> None:
    add_skill(tx, "agents", agent="ops", topic="git rebase conflicts", tip="Use rerere")
    outcome = add_skill(tx, "agents", agent="ops", topic="git rebase", tip="Autostash first")
    assert outcome.path == "agents/ops/git-rebase-conflicts.md"


def test_unrelated_topics_get_their_own_files(tx: DirTransaction, store_root: Path) -> None:
    add_skill(tx, "agents", agent="ops", topic="git rebase", tip="Autostash first")
    outcome = add_skill(tx, "agents", agent="ops", topic="git bisect", tip="Automate with run")
    assert outcome.new_topic
    index = (store_root / "agents/ops/skills-index.md").read_text()
    assert "- [git rebase](git-rebase.md): Autostash first\n" in index
    assert "- [git bisect](git-bisect.md): Automate with run\n" in index


def test_the_index_grows_past_fifty_lines_until_consolidation(
    tx: DirTransaction, store_root: Path
) -> None:
    for number in range(60):
        add_skill(tx, "agents", agent="ops", topic=f"tool{number}", tip=f"tip {number}")
    index = (store_root / "agents/ops/skills-index.md").read_text().splitlines()
    assert sum(line.startswith("- [") for line in index) == 60


def test_a_topic_named_like_the_index_does_not_overwrite_it(
    tx: DirTransaction, store_root: Path
) -> None:
    add_skill(tx, "agents", agent="ops", topic="docker", tip="a")
    outcome = add_skill(tx, "agents", agent="ops", topic="Skills Index", tip="b")
    assert outcome.path == "agents/ops/skills-index-topic.md"
    assert "[docker](docker.md)" in (store_root / "agents/ops/skills-index.md").read_text()


@pytest.mark.parametrize(
    ("agent", "topic"),
    [
        ("../../etc", "../../etc/passwd"),
        ("con", "con"),
        ("a/b", "x" * 5000),
        ("", "/root/.ssh/authorized_keys"),
    ],
)
def test_hostile_agent_and_topic_names_stay_inside_the_skills_folder(
    tx: DirTransaction, store_root: Path, agent: str, topic: str
) -> None:
    outcome = add_skill(tx, "agents", agent=agent, topic=topic, tip="be careful")
    written = (store_root / outcome.path).resolve()
    assert (store_root / "agents").resolve() in written.parents
    assert written.parent.parent == (store_root / "agents").resolve()
    assert SLUG_FILE.match(written.name)
    assert len(written.name) <= 64 + 3


def test_empty_topic_or_tip_is_a_clear_error(tx: DirTransaction) -> None:
    with pytest.raises(InvalidSkillError, match="topic"):
        add_skill(tx, "agents", agent="ops", topic=" ", tip="x")
    with pytest.raises(InvalidSkillError, match="tip"):
        add_skill(tx, "agents", agent="ops", topic="x", tip="- ")
    assert tx.written == []


def test_routine_tips_go_to_the_routine_file_by_topic(tx: DirTransaction, store_root: Path) -> None:
    def routine_tip(topic: str, tip: str) -> bool:
        return add_routine_skill(
            tx, "agents", agent="researcher", routine="Research Expansion", topic=topic, tip=tip
        ).added

    assert routine_tip("arxiv", "Search by category first")
    assert routine_tip("Zotero", "Export as CSL JSON")
    assert routine_tip("arXiv search", "Sort by submission date")
    assert not routine_tip("arxiv", "search by category first")

    path = store_root / "agents/researcher/routines/research-expansion-skills.md"
    assert path.read_text() == (
        "# Routine skills: Research Expansion\n"
        "\n"
        "Tactical tips for the routine Research Expansion of researcher, filed by memoryd.\n"
        "\n"
        "## arxiv\n"
        "\n"
        "- Search by category first\n"
        "- Sort by submission date\n"
        "\n"
        "## Zotero\n"
        "\n"
        "- Export as CSL JSON\n"
    )
    assert not (store_root / "agents/researcher/skills-index.md").exists()


def test_the_skills_folder_comes_from_the_caller(tx: DirTransaction, store_root: Path) -> None:
    add_skill(tx, "team/skills", agent="Ops Bot", topic="dns", tip="Lower the TTL first")
    assert agent_folder("team/skills", "Ops Bot") == "team/skills/ops-bot"
    assert (store_root / "team/skills/ops-bot/dns.md").is_file()


@given(st.text(max_size=80), st.text(max_size=200), st.text(max_size=40))
def test_any_agent_and_topic_give_a_slug_path_in_the_agent_folder(
    agent: str, topic: str, tip: str
) -> None:
    tx = MemoryTransaction()
    try:
        outcome = add_skill(tx, "agents", agent=agent, topic=topic, tip=tip)
    except InvalidSkillError:
        assert tx.files == {}
        return
    assert re.fullmatch(r"agents/[a-z0-9]+(-[a-z0-9]+)*/[a-z0-9]+(-[a-z0-9]+)*\.md", outcome.path)
    assert outcome.path in tx.files
    assert set(tx.files) == {outcome.path, outcome.path.rsplit("/", 1)[0] + "/skills-index.md"}


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("git", "git"),  # same slug beats a subset
        ("Git Hooks!", "git-hooks"),
        ("docker compose", "docker-compose-v2"),  # the subset sharing the most words
        ("e-mail", "email"),  # equal once run together
        ("kubernetes", None),
    ],
)
def test_match_topic_ranking(topic: str, expected: str | None) -> None:
    existing = [
        Topic("docker", "Docker"),
        Topic("docker-compose-v2", "docker compose v2"),
        Topic("email", "Email"),
        Topic("git", "git"),
        Topic("git-hooks", "git hooks"),
    ]
    found = match_topic(topic, existing)
    assert (found.slug if found else None) == expected
