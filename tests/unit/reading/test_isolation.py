"""What one agent reads of another's memory: entities and the tacit file are shared, an agent's
skills and its daily-note timeline lines are its own unless `[reading] share_between_agents`;
a long query is bounded; CJK words are found inside a sentence."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from tests.support.rewrite import Planted, planted_store

from memoryd.errors import ConfigError
from memoryd.jobs.environment import Environment
from memoryd.jobs.reading import agent_context, find
from memoryd.reading.search import MAX_TERMS, SearchIndex, SearchStopped, read_query
from memoryd.settings import Settings, parse_settings
from memoryd.store.tiers import TierRule

TODAY = date(2026, 3, 10)
NOTE = (
    "# Tuesday 2026-03-10\n\n## Timeline\n\n"
    "- 09:00 · alpha · deployed the kestrel service\n"
    "- 10:00 · beta · reviewed the kestrel budget\n\n"
    "## Pending facts\n\n- **Kestrel Group** (company): a kestrel supplier\n"
)


def shared_store(root: Path) -> Path:
    store = planted_store(
        root, [Planted("Jane Doe", "Owns the kestrel project", age=1)], today=TODAY
    )
    (store / "memory" / "2026-03-10.md").write_text(NOTE)
    for agent in ("alpha", "beta"):
        (store / "agents" / agent).mkdir(parents=True, exist_ok=True)
        (store / "agents" / agent / "skills.md").write_text(f"# Skills\n\n- kestrel: {agent} way\n")
    return store


def settings_for(tmp_path: Path, *, share: bool) -> Settings:
    return parse_settings(
        {
            "store": {"path": str(shared_store(tmp_path / "store"))},
            "state": {"path": str(tmp_path / "state")},
            "reading": {"share_between_agents": share},
        }
    )


ENV = Environment(environ={}, clock=lambda: datetime(2026, 3, 10, 12, tzinfo=UTC))


def texts(settings: Settings, agent: str, *, operator: bool = False) -> set[str]:
    found = find(settings, ENV, "kestrel", agent=agent, limit=50, record=False, operator=operator)
    return {hit.text for hit in found.hits}


def test_an_agent_reads_the_shared_memory_and_its_own_not_another_agents(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, share=False)
    alpha = texts(settings, "alpha")
    assert "- kestrel: alpha way" in alpha
    assert "- 09:00 · alpha · deployed the kestrel service" in alpha
    assert "Owns the kestrel project" in alpha  # entities are shared
    assert "- **Kestrel Group** (company): a kestrel supplier" in alpha  # so are pending facts
    assert not any("beta" in text for text in alpha)
    beta = texts(settings, "beta")
    assert "- kestrel: beta way" in beta
    assert not any("alpha" in text for text in beta)
    assert {"- kestrel: alpha way", "- kestrel: beta way"} <= texts(settings, "cli", operator=True)
    bundle = agent_context(settings, ENV, agent="alpha", record=False)
    assert "deployed the kestrel service" in bundle.text
    assert "reviewed the kestrel budget" not in bundle.text
    assert "a kestrel supplier" in bundle.text


def test_with_sharing_on_every_agent_reads_everything(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, share=True)
    alpha = texts(settings, "alpha")
    assert {"- kestrel: alpha way", "- kestrel: beta way"} <= alpha
    assert "- 10:00 · beta · reviewed the kestrel budget" in alpha
    bundle = agent_context(settings, ENV, agent="alpha", record=False)
    assert "reviewed the kestrel budget" in bundle.text


def test_the_switch_is_a_boolean() -> None:
    with pytest.raises(ConfigError, match="share_between_agents"):
        parse_settings({"store": {"path": "/x"}, "reading": {"share_between_agents": "maybe"}})
    with pytest.raises(ConfigError, match="reading"):
        parse_settings({"store": {"path": "/x"}, "reading": {"share": True}})


def test_a_one_megabyte_query_looks_up_a_bounded_number_of_words(tmp_path: Path) -> None:
    query = " ".join(f"word{n}" for n in range(150_000)) + " kestrel"
    assert len(query) > 1_000_000
    read = read_query(query)
    assert read.cut
    assert len(read.terms) <= MAX_TERMS
    store = shared_store(tmp_path / "store")
    with SearchIndex.open(tmp_path / "state", store) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        statements: list[str] = []
        index._db.set_trace_callback(statements.append)
        index.search(query, today=TODAY, rule=TierRule())
        assert len(statements) <= MAX_TERMS + 60
        assert max(len(sql) for sql in statements) < 20 * MAX_TERMS + 2_000
        assert not read_query("Where is Jane?").cut


def test_a_cjk_word_inside_a_sentence_is_found(tmp_path: Path) -> None:
    store = shared_store(tmp_path / "store")
    (store / "memory" / "2026-03-09.md").write_text(
        "# Monday\n\n## Timeline\n\n- 09:00 · alpha · 昨日は東京で会議がありました\n"
        "- 10:00 · alpha · 大阪に出張\n"
    )
    with SearchIndex.open(tmp_path / "state", store) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="agents")
        for query in ("東京", "会議について", "京"):
            hits = index.search(query, today=TODAY, rule=TierRule())
            assert [hit.text for hit in hits][:1] == [
                "- 09:00 · alpha · 昨日は東京で会議がありました"
            ]
        assert index.search("名古屋", today=TODAY, rule=TierRule()) == []


def test_a_search_told_to_stop_stops_and_is_not_retried_elsewhere(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, share=False)
    lines = "".join(f"- 11:{n % 60:02d} · alpha · kestrel task {n}\n" for n in range(300))
    (settings.store.path / "memory" / "2026-03-08.md").write_text(f"# Sunday\n\n{lines}")
    polls: list[int] = []

    def stop() -> bool:  # true from its second poll: stopped while SQLite works
        polls.append(1)
        return len(polls) > 1

    with pytest.raises(SearchStopped):
        find(settings, ENV, "kestrel", agent="alpha", record=False, stop=stop)
    assert len(polls) >= 2  # stopped by a poll while SQLite worked, not before
    with pytest.raises(SearchStopped, match="before it started"):
        find(settings, ENV, "kestrel", agent="alpha", record=False, stop=lambda: True)
    assert texts(settings, "alpha")  # the index is left usable


def test_skills_belong_to_their_agent_under_a_nested_skills_folder(tmp_path: Path) -> None:
    store = shared_store(tmp_path / "store")
    for agent in ("alpha", "beta"):
        folder = store / "team" / "agents" / agent
        folder.mkdir(parents=True)
        (folder / "skills.md").write_text(f"# Skills\n\n- osprey: {agent} way\n")
    with SearchIndex.open(tmp_path / "state", store) as index:
        index.refresh(tacit_file="MEMORY.md", skills_dir="team/agents")
        hits = index.search("osprey", today=TODAY, rule=TierRule(), reader="alpha")
        assert [(hit.text, hit.ref) for hit in hits] == [("- osprey: alpha way", "alpha")]
