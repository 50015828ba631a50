"""An answer given for a context the store changed since is made right by code, or asked again
only when it would be wrong (`memoryd.heartbeat.reconcile`). The store is real (`memoryd init`'s
code); contexts are built by the real context builder before and after facts are filed."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.extractors import (
    TACIT_FILE,
    answer,
    fact,
    make_chunk,
    make_store,
    open_session,
)

from memoryd.extractors.apply import StoreSession
from memoryd.extractors.context import build_context
from memoryd.heartbeat.reconcile import Stamp, reconcile, stamp
from memoryd.store.entities import Entity
from memoryd.store.facts import FactDraft
from memoryd.store.items import FactSource
from memoryd.worktree import UnitOfWork

TEXT = "Jane Doe came by today."


@pytest.fixture
def session(tmp_path: Path) -> StoreSession:
    return open_session(UnitOfWork(make_store(tmp_path / "store")))


def asked(session: StoreSession) -> Stamp:
    return stamp(
        build_context(
            make_chunk(TEXT),
            tx=session.tx,
            catalog=session.catalog,
            facts=session.facts,
            max_facts=10,
            skills_index_path="agents/ops/skills-index.md",
            tacit_path=TACIT_FILE,
        )
    )


def file(session: StoreSession, entity: Entity, text: str, supersedes: tuple[str, ...] = ()) -> str:
    chunk = make_chunk(TEXT)
    draft = FactDraft(
        fact=text,
        category="context",
        timestamp=chunk.day,
        conversation_date=chunk.day,
        source=FactSource(agent="ops", session="s1", file="/logs/a.jsonl", lines=(1, 1)),
        supersedes=supersedes,
    )
    return session.facts.file_for(entity).add(draft, recorded_at=chunk.day).fact.id


@pytest.fixture
def jane(session: StoreSession) -> Entity:
    return session.catalog.create("Jane Doe", "person", [], today=make_chunk().day)


def test_a_stamp_keeps_the_fact_ids_shown_and_reads_back(
    session: StoreSession, jane: Entity
) -> None:
    shown = file(session, jane, "Plays the cello")
    before = asked(session)
    assert before.facts == {shown}
    assert Stamp.from_text(before.to_text()) == before
    assert Stamp.from_text("not a stamp") is None


def test_a_fact_filed_meanwhile_is_dropped_from_the_answer(
    session: StoreSession, jane: Entity
) -> None:
    before = asked(session)
    file(session, jane, "Plays the cello")
    given = answer(facts=[fact("Jane Doe", "Plays the cello."), fact("Jane Doe", "Runs marathons")])
    assert asked(session).digest != before.digest
    result = reconcile(given, before, session, TEXT)
    assert result is not None and result.dropped == 1
    assert [f.fact for f in result.answer.facts] == ["Runs marathons"]


def test_an_unrelated_fact_filed_meanwhile_keeps_the_answer(
    session: StoreSession, jane: Entity
) -> None:
    before = asked(session)
    file(session, jane, "Plays the cello")
    given = answer(facts=[fact("Jane Doe", "Runs marathons every spring")])
    result = reconcile(given, before, session, TEXT)
    assert result is not None and result.answer == given


def test_a_fact_saying_much_the_same_as_one_filed_meanwhile_is_asked_again(
    session: StoreSession, jane: Entity
) -> None:
    before = asked(session)
    file(session, jane, "Works at Initech as an engineer")
    given = answer(facts=[fact("Jane Doe", "Works at Acme as an engineer")])
    assert reconcile(given, before, session, TEXT) is None


def test_the_same_words_in_a_fact_shown_when_asked_do_not_ask_again(
    session: StoreSession, jane: Entity
) -> None:
    file(session, jane, "Works at Initech as an engineer")
    before = asked(session)
    file(session, jane, "Plays the cello")
    given = answer(facts=[fact("Jane Doe", "Works at Acme as an engineer")])
    result = reconcile(given, before, session, TEXT)
    assert result is not None and result.answer == given


def test_a_superseded_target_is_redirected_to_the_fact_that_replaced_it(
    session: StoreSession, jane: Entity
) -> None:
    old = file(session, jane, "Lives in Lyon")
    before = asked(session)
    newer = file(session, jane, "Lives in Paris", supersedes=(old,))
    given = answer(facts=[fact("Jane Doe", "Moved to Berlin in March", supersedes=[old])])
    result = reconcile(given, before, session, TEXT)
    assert result is not None and result.redirected == 1
    assert result.answer.facts[0].supersedes == [newer]


def test_an_answer_without_a_stamp_is_asked_again(session: StoreSession) -> None:
    given = answer(facts=[fact("Jane Doe", "Runs marathons")])
    assert reconcile(given, None, session, TEXT) is None


def test_a_fact_from_a_chunk_shown_before_in_the_same_request_does_not_ask_again(
    session: StoreSession, jane: Entity
) -> None:
    before = asked(session)
    # The same request showed, before this chunk, the chunk that filed the fact (`file`'s
    # source): the model saw it.
    shared = Stamp(before.digest, before.facts, frozenset({("ops", "s1", "/logs/a.jsonl", 1, 1)}))
    assert Stamp.from_text(shared.to_text()) == shared
    file(session, jane, "Works at Initech as an engineer")
    given = answer(facts=[fact("Jane Doe", "Works at Acme as an engineer")])
    result = reconcile(given, shared, session, TEXT)
    assert result is not None and result.answer == given
    # From any other chunk, the same fact asks again.
    other = Stamp(before.digest, before.facts, frozenset({("ops", "s2", "/logs/a.jsonl", 1, 1)}))
    assert reconcile(given, other, session, TEXT) is None


def test_a_fact_replacing_the_one_this_fact_supersedes_is_superseded_in_turn(
    session: StoreSession, jane: Entity
) -> None:
    # Shown "frozen", the chunk says "red"; meanwhile an earlier chunk said "green": the same
    # line of values, said later, so "red" supersedes "green" (no need to ask again).
    shown = file(session, jane, "Her staging cluster is frozen")
    before = asked(session)
    green = file(session, jane, "Her staging cluster is green", supersedes=(shown,))
    red = fact("Jane Doe", "Her staging cluster is red", supersedes=[shown])
    result = reconcile(answer(facts=[red]), before, session, "Jane: staging is red now.")
    assert result is not None and result.redirected == 1
    assert result.answer.facts[0].supersedes == [green]


def test_a_line_left_out_as_shown_is_asked_again_once_what_was_shown_is_replaced(
    session: StoreSession, jane: Entity
) -> None:
    # Shown "frozen" as standing, the model left the chunk's "still frozen" out; meanwhile
    # "green" replaced it: shown the store now, the model would file "frozen" again.
    shown = file(session, jane, "Her staging cluster is frozen")
    before = asked(session)
    file(session, jane, "Her staging cluster is green", supersedes=(shown,))
    said = "Jane Doe: her staging cluster is frozen, as before."
    assert reconcile(answer(facts=[]), before, session, said) is None
    # A chunk that does not say it had nothing to leave out.
    other = "Jane Doe came by to talk about the offsite."
    result = reconcile(answer(facts=[]), before, session, other)
    assert result is not None and result.answer.facts == []


def test_a_line_replaced_by_a_chunk_shown_in_the_same_request_is_not_asked_again(
    session: StoreSession, jane: Entity
) -> None:
    shown = file(session, jane, "Her staging cluster is frozen")
    before = asked(session)
    # "green" comes from the chunk the same request showed before this one (`file`'s source).
    file(session, jane, "Her staging cluster is green", supersedes=(shown,))
    shared = Stamp(before.digest, before.facts, frozenset({("ops", "s1", "/logs/a.jsonl", 1, 1)}))
    said = "Jane Doe: her staging cluster is frozen, as before."
    result = reconcile(answer(facts=[]), shared, session, said)
    assert result is not None
