"""Counts in words: singular for one, the right plural otherwise."""

from __future__ import annotations

import pytest

from memoryd.wording import plural, plural_of


@pytest.mark.parametrize(
    ("count", "word", "expected"),
    [
        (1, "fact", "1 fact"),
        (0, "fact", "0 facts"),
        (2, "fact", "2 facts"),
        (1, "file", "1 file"),
        (1, "entity", "1 entity"),
        (4, "entity", "4 entities"),
        (3, "access", "3 accesses"),
        (2, "tacit line", "2 tacit lines"),
        (1, "active fact", "1 active fact"),
        (5, "day", "5 days"),
    ],
)
def test_a_count_takes_the_number_of_its_noun(count: int, word: str, expected: str) -> None:
    assert plural(count, word) == expected


def test_a_phrase_takes_the_plural_of_its_last_word() -> None:
    assert plural_of("over-long line") == "over-long lines"
    assert plural_of("summary") == "summaries"
    assert plural_of("day") == "days"  # a vowel before the y: regular
