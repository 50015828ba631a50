"""The context shown with a chunk: known entities named in it, their capped facts, the skills.

The store is real (made by `memoryd init`'s code) and seen through one `UnitOfWork`, as within a
heartbeat: facts staged earlier in the transaction are part of the context.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

import pytest
from tests.support.extractors import (
    answer,
    fact,
    make_chunk,
    make_store,
    open_session,
    person,
)

from memoryd.extractors.apply import StoreSession, apply_answer
from memoryd.extractors.context import MAX_ENTITIES, SKILLS_INDEX_LIMIT, build_context
from memoryd.extractors.extract import ChunkContext
from memoryd.extractors.pending import PendingOverlay
from memoryd.gitrepo import GitStore
from memoryd.state import State
from memoryd.store.entities import Entity
from memoryd.store.facts import FactDraft, FactSource
from memoryd.store.skills import add_skill
from memoryd.worktree import UnitOfWork

SOURCE = FactSource(agent="ops", session="s0", file="/logs/old.jsonl", lines=(1, 1))
DAY = date(2026, 2, 1)
SKILLS_INDEX = "agents/ops/skills-index.md"


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def git(store_root: Path) -> GitStore:
    return make_store(store_root)


@pytest.fixture
def session(git: GitStore) -> StoreSession:
    return open_session(UnitOfWork(git))


def entity(
    session: StoreSession,
    name: str,
    facts: Sequence[str] = (),
    *,
    kind: str = "person",
    aliases: Sequence[str] = (),
    ages: Sequence[int] = (),
) -> Entity:
    """An entity with `facts`; the n-th was last used `ages[n]` days after DAY (default 0)."""
    created = session.catalog.create(name, kind, aliases, today=DAY)
    fact_file = session.facts.file_for(created)
    for n, text in enumerate(facts):
        used = DAY + timedelta(days=ages[n] if n < len(ages) else 0)
        fact_file.add(FactDraft(text, "context", used, used, SOURCE), recorded_at=DAY)
    return created


def context_for(
    session: StoreSession, *texts: str, max_facts: int = 10, skills_index: str = SKILLS_INDEX
) -> ChunkContext:
    return build_context(
        make_chunk(*texts),
        tx=session.tx,
        catalog=session.catalog,
        facts=session.facts,
        max_facts=max_facts,
        skills_index_path=skills_index,
    )


def headers(context: ChunkContext) -> list[str]:
    return [line for line in context.known_entities.splitlines() if not line.startswith("  ")]


def fact_lines(context: ChunkContext) -> list[str]:
    return [line for line in context.known_entities.splitlines() if line.startswith("  ")]


def fact_ids(context: ChunkContext) -> list[str]:
    return [line.strip().split(":", 1)[0] for line in fact_lines(context)]


# --- which entities ---------------------------------------------------------------------------


def test_entities_named_in_the_chunk_are_shown_with_their_facts_and_ids(
    session: StoreSession,
) -> None:
    entity(session, "Jane Doe", ["Joined Acme as CTO", "Lives in Paris"])
    entity(session, "Acme", ["Sells anvils"], kind="company")
    entity(session, "Globex", ["Competitor of Acme"], kind="company")

    context = context_for(session, "Lunch with Jane Doe,", "she still works at Acme")

    assert context.known_entities.splitlines() == [
        "companies/acme: Acme, company",
        "  acme-001: Sells anvils",
        "people/jane-doe: Jane Doe, person",
        "  jane-doe-002: Lives in Paris",  # used on the same day: the newer fact first
        "  jane-doe-001: Joined Acme as CTO",
    ]


def test_a_fact_true_only_after_the_chunks_day_is_marked_as_later(session: StoreSession) -> None:
    jane = entity(session, "Jane Doe", ["Head of Data"])
    chunk_day = make_chunk("Jane Doe").day
    later = chunk_day + timedelta(days=30)
    session.facts.file_for(jane).add(
        FactDraft("VP of Data", "status", later, later, SOURCE), recorded_at=later
    )

    shown = context_for(session, "Jane Doe").known_entities

    assert f"jane-doe-002 (true from {later.isoformat()}, after this excerpt): VP of Data" in shown
    assert "jane-doe-001: Head of Data" in shown


def test_an_alias_in_the_chunk_brings_its_entity(session: StoreSession) -> None:
    entity(session, "Jane Doe", ["Lives in Paris"], aliases=["JD"])

    context = context_for(session, "jd says hi")

    assert headers(context) == ["people/jane-doe: Jane Doe, person (also: JD)"]


def test_names_are_matched_as_whole_words(session: StoreSession) -> None:
    entity(session, "Al", ["Runs the lab"])

    assert context_for(session, "Alice and Alan went home").known_entities == ""
    assert headers(context_for(session, "Thanks, AL!")) == ["people/al: Al, person"]


def test_a_chunk_that_names_no_known_entity_has_no_entity_context(session: StoreSession) -> None:
    entity(session, "Jane Doe", ["Lives in Paris"])

    assert context_for(session, "Nothing to see here").known_entities == ""


def test_an_archived_entity_is_shown_with_its_status(session: StoreSession) -> None:
    launch = entity(session, "Launch", ["Shipped in March"], kind="project")
    session.catalog.set_status(launch, "completed")

    context = context_for(session, "Remember the Launch?")

    assert headers(context) == ["projects/launch: Launch, project, completed"]
    assert fact_ids(context) == ["launch-001"]


# --- which facts ----------------------------------------------------------------------------


def test_only_active_facts_are_shown(session: StoreSession) -> None:
    jane = entity(session, "Jane Doe", ["Lives in Paris", "Lives in Berlin"])
    session.facts.file_for(jane).supersede(["jane-doe-001"], "jane-doe-002")

    assert fact_ids(context_for(session, "Jane Doe")) == ["jane-doe-002"]


def test_the_most_recently_used_facts_come_first(session: StoreSession) -> None:
    entity(session, "Jane Doe", ["Old", "Newest", "Middle", "Oldest"], ages=[2, 9, 5, 0])

    assert fact_ids(context_for(session, "Jane Doe", max_facts=2)) == [
        "jane-doe-002",
        "jane-doe-003",
    ]


def test_among_facts_used_on_the_same_day_the_most_used_comes_first(
    session: StoreSession,
) -> None:
    jane = entity(session, "Jane Doe", ["Rarely used", "Often used"])
    for _ in range(3):
        session.facts.file_for(jane).bump("jane-doe-002", DAY)

    assert fact_ids(context_for(session, "Jane Doe", max_facts=1)) == ["jane-doe-002"]


def test_the_fact_cap_is_shared_so_one_entity_cannot_crowd_out_the_others(
    session: StoreSession,
) -> None:
    entity(session, "Jane Doe", [f"Fact number {n}" for n in range(10)])
    entity(session, "Bob Stone", ["Plays the cello", "Lives in Lyon"])

    ids = fact_ids(context_for(session, "Jane Doe met Bob Stone", max_facts=6))

    assert len(ids) == 6
    assert sorted(i for i in ids if i.startswith("bob-stone")) == ["bob-stone-001", "bob-stone-002"]


def test_a_zero_cap_shows_the_entities_without_facts(session: StoreSession) -> None:
    entity(session, "Jane Doe", ["Lives in Paris"])

    context = context_for(session, "Jane Doe", max_facts=0)

    assert headers(context) == ["people/jane-doe: Jane Doe, person"]
    assert fact_lines(context) == []


def test_an_entity_whose_items_file_is_broken_is_shown_without_facts(
    git: GitStore, session: StoreSession, store_root: Path
) -> None:
    entity(session, "Jane Doe", ["Lives in Paris"])
    session.facts.save_all()
    assert isinstance(session.tx, UnitOfWork)
    session.tx.apply_and_commit("test: plant Jane", {})
    (store_root / "life/areas/people/jane-doe/items.json").write_text("[{", encoding="utf-8")

    context = context_for(open_session(UnitOfWork(git)), "Jane Doe")

    assert headers(context) == ["people/jane-doe: Jane Doe, person"]
    assert fact_lines(context) == []


def test_facts_filed_by_an_earlier_chunk_of_the_heartbeat_are_in_the_context(
    tmp_path: Path, session: StoreSession
) -> None:
    with State.open(tmp_path / "state.db") as state:
        apply_answer(
            answer(
                entities=[person("Jane Doe", relationship=True)],
                facts=[fact("Jane Doe", "Lives in Paris")],
            ),
            make_chunk("Jane Doe moved to Paris"),
            session,
            pending=PendingOverlay(state.pending),
            mentions=state.mentions,
            min_mentions=3,
        )

    assert fact_lines(context_for(session, "How is Jane Doe?")) == [
        "  jane-doe-001: Lives in Paris"
    ]


# --- the skills index and the bounds ----------------------------------------------------------


def test_the_agents_skills_index_is_included(session: StoreSession) -> None:
    add_skill(session.tx, "agents", agent="ops", topic="git", tip="Sign your tags")

    context = context_for(session, "hello")

    assert "- [git](git.md): Sign your tags" in context.skills_index.splitlines()
    assert context.skills_index == context.skills_index.strip()
    assert (
        context_for(session, "hello", skills_index="agents/other/skills-index.md").skills_index
        == ""
    )


def test_a_long_skills_index_is_cut_at_a_line_end_within_its_limit(
    session: StoreSession,
) -> None:
    lines = [f"- [topic {n:03d}](topic-{n:03d}.md): a tip long enough to fill" for n in range(200)]
    session.tx.write_text(SKILLS_INDEX, "# Skills of ops\n\n" + "\n".join(lines) + "\n")

    index = context_for(session, "hello").skills_index

    note = "(… more topics not shown)"
    assert index.endswith("\n" + note)
    shown = index.removesuffix("\n" + note)
    assert len(shown) <= SKILLS_INDEX_LIMIT
    assert all(line in lines for line in shown.splitlines()[2:])  # whole lines only
    assert len(shown.splitlines()) > 10


def test_the_context_stays_bounded_however_many_entities_the_chunk_names(
    session: StoreSession,
) -> None:
    names = [f"Client {n:04d}" for n in range(MAX_ENTITIES + 15)]
    for name in names:
        entity(session, name, [f"{name} pays on time", f"{name} wants a discount"], kind="company")

    context = context_for(session, "We called " + ", ".join(names), max_facts=30)

    assert len(headers(context)) == MAX_ENTITIES
    assert len(fact_lines(context)) == 30
