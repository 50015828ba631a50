"""write_summary: the request holds hot then warm facts only; answers are validated strictly."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.rewrite import TODAY, fact, person

from memoryd.llm.params import message_params
from memoryd.rewrite.summary import (
    MAX_LINES,
    InvalidSummaryError,
    build_request,
    summary_from_tool_input,
    validate_summary,
)
from memoryd.store.summaries import (
    SummaryInput,
    all_cold_body,
    render_template,
    summary_file,
    summary_input,
)
from memoryd.store.tiers import TierRule

RULE = TierRule()
GIVEN = frozenset({"jane-doe-001", "jane-doe-002"})


def sample_input() -> SummaryInput:
    return summary_input(
        person(),
        [
            fact("jane-doe-001", "Joined Acme as CTO", age=1),
            fact("jane-doe-002", "Lives in Lisbon", age=20),
            fact("jane-doe-003", "Secret cold thing", age=90),
            fact("jane-doe-004", "Old superseded thing", age=1, status="superseded"),
        ],
        TODAY,
        RULE,
    )


def test_request_sends_hot_then_warm_and_never_cold_or_superseded() -> None:
    request = build_request(sample_input(), model="claude-haiku-5-5", today="2026-03-10")
    text = request.user_content
    assert text.index("[jane-doe-001] Joined Acme as CTO") < text.index("[jane-doe-002] Lives")
    assert "Secret cold thing" not in text and "jane-doe-003" not in text
    assert "Old superseded thing" not in text
    assert request.tool.name == "write_summary"
    # Byte-stable: the same input gives the same API parameters (batches and caching rely on it).
    again = build_request(sample_input(), model="claude-haiku-5-5", today="2026-03-10")
    assert message_params(request) == message_params(again)


def test_an_entity_with_only_cold_facts_is_summarized_from_its_most_important_ones() -> None:
    cold = [fact(f"jane-doe-{n:03d}", f"Old thing {n}", age=90 + n) for n in range(1, 8)]
    cold[5] = replace(cold[5], category="milestone")  # outranks the newer context facts
    cold[6] = replace(cold[6], access_count=3)  # used most: first, though the oldest
    subject = summary_input(person(), cold, TODAY, RULE)
    assert [f.id for f in subject.facts] == [
        "jane-doe-007",
        "jane-doe-006",
        "jane-doe-001",
        "jane-doe-002",
        "jane-doe-003",
    ]
    assert subject.cold_count == 7 and {f.tier for f in subject.facts} == {"cold"}
    assert not subject.in_use  # the rewrite renders it without a model
    body = render_template(subject)
    assert body.startswith("## Background\n\n- Old thing 7 (from 2025-12) [jane-doe-007]\n")
    assert validate_summary(body, subject.ids) == body
    assert "used recently" not in body


def test_a_valid_summary_is_cleaned_and_its_title_dropped() -> None:
    body = validate_summary(
        "# Jane\n\n## Work\n- CTO at Acme [jane-doe-001]   \n\nLives in Lisbon [jane-doe-001, "
        "jane-doe-002]\n\n",
        GIVEN,
    )
    assert (
        body
        == "## Work\n- CTO at Acme [jane-doe-001]\n\nLives in Lisbon [jane-doe-001, jane-doe-002]"
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("- CTO at Acme [jane-doe-009]", "not one of the facts given"),
        ("- CTO at Acme [jane-doe-001, jane-doe-003]", "jane-doe-003"),
        ("- CTO at Acme [jane-doe-001]\nShe is great.", "cites no fact"),
        ("- CTO at Acme [jane-doe-001]\n# Another title", "second '# ' title"),
        ("", "empty"),
        ("## Only a heading", "empty"),
        ("- [jane-doe-001]", "no text"),
        ("- CTO [jane-doe-001 and more]", "not a fact id"),
        ("## Heading [jane-doe-001]\n- x [jane-doe-001]", "subheading"),
        ("\n".join(["- a [jane-doe-001]"] * (MAX_LINES + 1)), "too long"),
    ],
)
def test_invalid_summaries_are_refused(answer: str, reason: str) -> None:
    with pytest.raises(InvalidSummaryError, match=reason):
        validate_summary(answer, GIVEN)


def test_a_tool_answer_without_summary_is_refused() -> None:
    with pytest.raises(InvalidSummaryError, match="no write_summary"):
        summary_from_tool_input(None)
    with pytest.raises(InvalidSummaryError, match="string"):
        summary_from_tool_input({"summary": 3})


def test_template_lists_hot_then_warm_and_passes_validation() -> None:
    summary = sample_input()
    body = render_template(summary)
    assert body == (
        "## Recent\n\n- Joined Acme as CTO [jane-doe-001]\n\n"
        "## Background\n\n- Lives in Lisbon [jane-doe-002]"
    )
    assert validate_summary(body, summary.ids) == body
    assert summary_file("Jane Doe", body).startswith("# Jane Doe\n\n## Recent\n")
    assert summary_file("Jane Doe", "") == "# Jane Doe\n"
    assert "Jane Doe" in all_cold_body("Jane Doe")


fact_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=80
).filter(lambda text: any(ch.isalnum() for ch in text))


@given(st.lists(st.tuples(fact_text, st.integers(0, 40), st.integers(0, 50)), max_size=30))
def test_the_template_always_passes_the_validation(
    facts: list[tuple[str, int, int]],
) -> None:
    subject = summary_input(
        person(),
        [
            fact(f"jane-doe-{i:03d}", text, age=age, accesses=n)
            for i, (text, age, n) in enumerate(facts, 1)
        ],
        TODAY,
        RULE,
    )
    body = render_template(subject)
    if subject.facts:
        assert validate_summary(body, subject.ids) == body
    else:
        assert body == ""


ids = st.from_regex(r"[a-z]{1,6}-[0-9]{3}", fullmatch=True)


@given(st.sets(ids, min_size=1, max_size=8), ids)
def test_a_line_citing_an_id_not_given_is_always_refused(given_ids: set[str], other: str) -> None:
    allowed = frozenset(given_ids - {other})
    cited = ", ".join(sorted(given_ids | {other}))
    if not allowed:
        return
    ok_line = f"- Known things [{', '.join(sorted(allowed))}]"
    assert validate_summary(ok_line, allowed) == ok_line
    with pytest.raises(InvalidSummaryError, match="not one of the facts given"):
        validate_summary(f"{ok_line}\n- More things [{cited}]", allowed)


def test_warm_lines_before_hot_ones_are_put_after_them_in_a_flat_summary() -> None:
    given = frozenset({"j-001", "j-002", "j-003"})
    hot = frozenset({"j-003"})
    text = "- Lives in Lisbon [j-001]\n\n- Knows Bob [j-002]\n- Joined Acme [j-003, j-001]"
    assert validate_summary(text, given, hot) == (
        "- Joined Acme [j-003, j-001]\n- Lives in Lisbon [j-001]\n- Knows Bob [j-002]"
    )
    ordered = "- Joined Acme [j-003]\n\n- Lives in Lisbon [j-001]"
    assert validate_summary(ordered, given, hot) == ordered  # already in order: untouched
    assert validate_summary(text, given) == text  # no hot fact given: nothing to order


def test_warm_before_hot_across_sections_is_refused() -> None:
    text = "## Background\n\n- Lives in Lisbon [j-001]\n\n## Now\n\n- Joined Acme [j-003]"
    with pytest.raises(InvalidSummaryError, match="hot facts go first"):
        validate_summary(text, frozenset({"j-001", "j-003"}), frozenset({"j-003"}))
