"""The full-text index of conversation-days and whole-word mention counting (docs/store-format.md,
Creating entities)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.state import ConversationDay, State

DAY1 = date(2026, 3, 1)
DAY2 = date(2026, 3, 2)


def test_a_short_name_does_not_match_inside_a_longer_word(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "Alice reviewed the plan. Alright, Albania next.")
    assert state.mentions.count_mentions(["Al"]) == 0
    assert state.mentions.count_mentions(["Alice"]) == 1


def test_case_and_punctuation_do_not_hide_a_name(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "we met acme, then lunch")
    state.mentions.append("cos", "s2", DAY1, "ACME shipped it")
    state.mentions.append("cos", "s3", DAY1, "(Acme) and 'Acme'.")
    state.mentions.append("cos", "s4", DAY1, "Acmeville is a town; acme_corp is a handle")
    assert state.mentions.count_mentions(["Acme"]) == 3


def test_repeated_mentions_in_one_conversation_day_count_once(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "Acme Acme Acme. " * 10)
    state.mentions.append("cos", "s1", DAY1, "later that day: Acme again")
    assert state.mentions.count_mentions(["Acme"]) == 1


def test_different_days_sessions_and_agents_count_separately(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "Acme")
    state.mentions.append("cos", "s1", DAY2, "Acme")
    state.mentions.append("cos", "s2", DAY1, "Acme")
    state.mentions.append("coder", "s1", DAY1, "Acme")
    assert state.mentions.count_mentions(["Acme"]) == 4
    assert state.mentions.mention_days(["acme"]) == [
        ConversationDay("coder", "s1", DAY1),
        ConversationDay("cos", "s1", DAY1),
        ConversationDay("cos", "s1", DAY2),
        ConversationDay("cos", "s2", DAY1),
    ]


def test_a_name_and_its_aliases_count_one_mention_per_conversation_day(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "Jane said hi. Jane Doe is the CTO.")
    state.mentions.append("cos", "s2", DAY1, "Only Jane here")
    state.mentions.append("cos", "s3", DAY1, "Nobody relevant")
    assert state.mentions.count_mentions(["Jane Doe", "Jane"]) == 2


def test_multi_word_names_match_as_a_phrase_across_white_space(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "I talked to jane   doe today")
    state.mentions.append("cos", "s2", DAY1, "Jane\nDoe, again")
    state.mentions.append("cos", "s3", DAY1, "Jane Doeson and Doe, Jane")
    state.mentions.append("cos", "s4", DAY1, "Jane-Doe is hyphenated")
    assert state.mentions.count_mentions(["Jane Doe"]) == 2


def test_names_with_punctuation_and_fts_syntax_are_data(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, 'Use C++ with "Quoted Co" and AT&T (NEAR OR) x*')
    state.mentions.append("cos", "s2", DAY1, "C is fine, AT and T separately")
    assert state.mentions.count_mentions(["C++"]) == 1
    assert state.mentions.count_mentions(['"Quoted Co"']) == 1
    assert state.mentions.count_mentions(["AT&T"]) == 1
    assert state.mentions.count_mentions(["NEAR OR"]) == 1
    assert state.mentions.count_mentions(["x*"]) == 1
    assert state.mentions.count_mentions(["C"]) == 2


def test_diacritics_are_not_folded_in_the_final_check(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "José arrived")
    state.mentions.append("cos", "s2", DAY1, "Jose arrived")
    state.mentions.append("cos", "s3", DAY1, "JOSÉ shouted")
    assert state.mentions.count_mentions(["José"]) == 2


def test_names_without_letters_or_digits_and_empty_lists_count_nothing(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "!!! --- and spaces")
    assert state.mentions.count_mentions([]) == 0
    assert state.mentions.count_mentions(["", "   ", "!!!"]) == 0


def test_appending_grows_the_day_text_and_skips_a_block_already_there(state: State) -> None:
    assert state.mentions.append("cos", "s1", DAY1, "first part")
    assert state.mentions.append("cos", "s1", DAY1, "second part about Globex")
    # The same records read again after a crash add nothing.
    assert not state.mentions.append("cos", "s1", DAY1, "second part about Globex")
    assert not state.mentions.append("cos", "s1", DAY1, "   ")
    assert state.mentions.text_of("cos", "s1", DAY1) == "first part\n\nsecond part about Globex"
    assert state.mentions.count_mentions(["Globex"]) == 1


def test_appended_blocks_never_join_into_one_word(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "Ac")
    state.mentions.append("cos", "s1", DAY1, "me")
    assert state.mentions.count_mentions(["Acme"]) == 0


def test_mentions_made_before_the_name_was_reported_still_count(state_path: Path) -> None:
    with State.open(state_path) as state:
        state.mentions.append("cos", "s1", DAY1, "Met Initech people")
        state.mentions.append("cos", "s2", DAY2, "Initech again")
    # The transcripts may be gone; the index remembers.
    with State.open(state_path) as state:
        assert state.mentions.count_mentions(["Initech"]) == 2


def test_forget_before_deletes_old_days_from_the_index(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "Acme")
    state.mentions.append("cos", "s1", DAY2, "Acme")
    assert state.mentions.forget_before(DAY2) == 1
    assert state.mentions.count_mentions(["Acme"]) == 1


@pytest.fixture(scope="module")
def shared_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[State]:
    opened = State.open(tmp_path_factory.mktemp("mentions") / "state.db")
    opened.mentions.append("cos", "s1", DAY1, 'Alice met "Bob" at Acme, Inc. -- C++ & co.')
    opened.mentions.append("cos", "s2", DAY1, "ü ß İ \u0131 \x00 NEAR AND OR NOT ^ * : ( ) { } [ ]")
    yield opened
    opened.close()


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(max_size=30), max_size=5))
def test_arbitrary_names_never_make_counting_raise(shared_state: State, names: list[str]) -> None:
    count = shared_state.mentions.count_mentions(names)
    assert 0 <= count <= 2


WORDS = ["acme", "Acme", "ACME", "al", "Alice", "bob", "Bob's", "c++", "x-ray", "x", "ray"]


def overlapping(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    found = (pattern.match(text, start) for start in range(len(text)))
    return [match for match in found if match is not None]


def standalone(text: str, start: int, end: int) -> bool:
    """A whole word not joined to a path, URL, e-mail or identifier (docs/store-format.md)."""
    before = text[start - 1] if start else " "
    after, next_one = text[end : end + 1] or " ", text[end + 1 : end + 2] or " "
    if before.isalnum() or before in "_/\\@.-:~$":
        return False
    if after.isalnum() or after in "_/\\@":
        return False
    joined = after in "-.:'" and (next_one.isalnum())
    return not joined or text[end : end + 2].lower() == "'s"


@settings(max_examples=60, deadline=None)
@given(
    documents=st.lists(
        st.lists(st.sampled_from([*WORDS, ",", ".", "\n", "(", ")"]), max_size=12),
        min_size=1,
        max_size=6,
    ),
    name=st.sampled_from([*WORDS, "Acme Alice", "x ray", "bob's"]),
)
def test_counting_agrees_with_a_whole_word_scan_of_every_day(
    tmp_path_factory: pytest.TempPathFactory, documents: list[list[str]], name: str
) -> None:
    with State.open(tmp_path_factory.mktemp("agree") / "state.db") as state:
        texts = [" ".join(words) for words in documents]
        for number, text in enumerate(texts):
            state.mentions.append("cos", f"s{number}", DAY1, text)
        words = r"\s+".join(re.escape(word) for word in name.split())
        pattern = re.compile(words, re.IGNORECASE)
        expected = sum(
            1
            for text in texts
            if text.strip()
            and any(standalone(text, m.start(), m.end()) for m in overlapping(pattern, text))
        )
        assert state.mentions.count_mentions([name]) == expected


def test_a_short_block_inside_a_longer_word_is_still_appended(state: State) -> None:
    state.mentions.append("cos", "s1", DAY1, "Alice called")
    assert state.mentions.append("cos", "s1", DAY1, "Al")
    assert state.mentions.count_mentions(["Al"]) == 1


@settings(max_examples=60, deadline=None)
@given(blocks=st.lists(st.sampled_from(["Acme", "Al", "Alice", "Al\n\nAlice", "x y"]), max_size=6))
def test_reading_the_same_blocks_again_changes_neither_text_nor_counts(
    tmp_path_factory: pytest.TempPathFactory, blocks: list[str]
) -> None:
    with State.open(tmp_path_factory.mktemp("again") / "state.db") as state:
        for block in blocks:
            state.mentions.append("cos", "s1", DAY1, block)
        text = state.mentions.text_of("cos", "s1", DAY1)
        counts = [state.mentions.count_mentions([name]) for name in ("Acme", "Al", "Alice")]
        for block in blocks:
            assert not state.mentions.append("cos", "s1", DAY1, block)
        assert state.mentions.text_of("cos", "s1", DAY1) == text
        assert [state.mentions.count_mentions([n]) for n in ("Acme", "Al", "Alice")] == counts
        for name in ("Acme", "Al", "Alice"):
            said = name in " ".join(blocks).split()
            assert state.mentions.count_mentions([name]) == (1 if said else 0)


def test_a_name_inside_a_path_url_email_or_identifier_counts_no_mention(state: State) -> None:
    for number, text in enumerate(
        ["mount /dev/sda1", "restart dev-server", "see https://dev.example.com", "dev@x.io"]
    ):
        state.mentions.append("cos", f"p{number}", DAY1, text)
    assert state.mentions.count_mentions(["Dev"]) == 0
    state.mentions.append("cos", "q1", DAY1, "Dev's review, thanks Dev.")
    assert state.mentions.count_mentions(["Dev"]) == 1
