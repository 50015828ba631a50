"""The answer journal: an answer is reused only for exactly the question it answered, and is
forgotten once its summary is committed or its question is no longer asked."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.support.rewrite import TODAY, fact, person

from memoryd.rewrite.answers import asked_digest, split_answered
from memoryd.rewrite.recovery import build_intent, finalize_rewrite
from memoryd.rewrite.select import Candidate
from memoryd.state.facade import State
from memoryd.state.rewrites import EntityRewrite
from memoryd.store.summaries import summary_input
from memoryd.store.tiers import TierRule

NOW = datetime(2026, 3, 10, 3, tzinfo=UTC)
MODEL = "claude-test"


@pytest.fixture
def state(tmp_path: Path) -> Iterator[State]:
    opened = State.open(tmp_path / "state.db")
    yield opened
    opened.close()


def candidate(name: str, slug: str, *texts: str) -> Candidate:
    facts = [fact(f"{slug}-{n:03d}", text, age=1) for n, text in enumerate(texts, 1)]
    return Candidate(summary_input(person(name, slug), facts, TODAY, TierRule()), "items", None)


def test_the_asked_digest_changes_with_the_input_and_the_model() -> None:
    jane = candidate("Jane Doe", "jane-doe", "CTO at Acme").input
    assert asked_digest(jane, model=MODEL) == asked_digest(jane, model=MODEL)
    assert asked_digest(jane, model=MODEL) != asked_digest(jane, model="claude-other")
    changed = candidate("Jane Doe", "jane-doe", "CTO at Acme", "Lives in Porto").input
    assert asked_digest(jane, model=MODEL) != asked_digest(changed, model=MODEL)


def test_only_an_answer_to_the_same_question_is_reused(state: State) -> None:
    jane = candidate("Jane Doe", "jane-doe", "CTO at Acme")
    john = candidate("John Roe", "john-roe", "Lives in Lisbon")
    for item, body in ((jane, "- CTO [jane-doe-001]"), (john, "- Lisbon [john-roe-001]")):
        state.rewrites.journal_answer(
            item.input.entity.ref,
            asked_digest=asked_digest(item.input, model=MODEL),
            body=body,
            run_id="run-1",
            answered_at=NOW,
        )
    john_changed = candidate("John Roe", "john-roe", "Lives in Lisbon", "Moved to Porto")
    reuse = split_answered([jane, john_changed], state.rewrites.journalled_answers(), model=MODEL)
    assert reuse.answered == [(jane, "- CTO [jane-doe-001]")]
    assert reuse.asking == [john_changed]
    assert state.rewrites.prune_answers(reuse.keep) == 1  # John's answer to the old question
    assert list(state.rewrites.journalled_answers()) == [jane.input.entity.ref]


def test_committing_a_summary_forgets_its_answer(state: State) -> None:
    jane = candidate("Jane Doe", "jane-doe", "CTO at Acme")
    ref = jane.input.entity.ref
    state.rewrites.journal_answer(
        ref, asked_digest="d", body="- CTO [jane-doe-001]", run_id="run-1", answered_at=NOW
    )
    intent = build_intent(
        "run-1",
        writes=[],
        records=[EntityRewrite(ref, NOW, "llm:a:b", None)],
        memos={},
        finished_batch=None,
        succeeded=True,
    )
    finalize_rewrite(state, intent, NOW)
    assert state.rewrites.journalled_answers() == {}
