"""Which known entities an excerpt names in prose, and which only look like a name in it."""

from __future__ import annotations

from datetime import date

import pytest

from memoryd.store.catalog import find_in_prose
from memoryd.store.entities import Entity
from memoryd.store.vocabulary import EntityKind

DAY = date(2026, 3, 1)


def make(name: str, *aliases: str, kind: EntityKind = "person") -> Entity:
    slug = name.casefold().replace(" ", "-")
    return Entity(kind=kind, slug=slug, name=name, aliases=aliases, created=DAY, status="active")


DEV = make("Dev Patel", "Dev")
JANE = make("Jane Doe")
ACME = make("Acme", kind="company")


def named(text: str, entity: Entity) -> bool:
    return entity in find_in_prose(text, [entity]).mentioned


@pytest.mark.parametrize(
    "text",
    [
        "Mount /dev/sda1 before the backup.",
        "Deploy to dev-server first.",
        "Set dev_server = true.",
        "Our DevOps team owns it.",
        "Devon will review the PR.",
        "See https://dev.example.com/docs for it.",
        "Mail dev@example.com if it breaks.",
        "Run it in dev before staging.",
        "The DEV environment is down.",
        "npm install --save-dev typescript",
        "Use `dev` as the profile.",
    ],
)
def test_a_short_common_alias_inside_a_path_identifier_url_email_or_word_is_no_mention(
    text: str,
) -> None:
    assert not named(text, DEV)


@pytest.mark.parametrize(
    "text",
    [
        "I met Dev yesterday.",
        "Dev's review was thorough.",
        "Dev said the migration is done.",
        "Thanks, Dev!",
        "(Dev) will present.",
        "Lunch with dev patel on Friday.",
    ],
)
def test_an_alias_or_name_written_as_a_name_in_prose_is_a_mention(text: str) -> None:
    assert named(text, DEV)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("acme's new CFO starts Monday.", True),
        ("We ship to ACME, Globex and Initech.", True),
        ("Forward it to billing@acme.com please.", False),
        ("Open https://acme.io/pricing now.", False),
        ("Look in src/acme/models.py for it.", False),
        ("The AcmeCorp account is separate.", False),
    ],
)
def test_a_name_that_is_no_common_word_matches_in_any_case_but_only_in_prose(
    text: str, expected: bool
) -> None:
    assert named(text, ACME) is expected


def test_hyphenated_and_non_ascii_names_match_with_or_without_their_accents() -> None:
    ana = make("Ana-María López")
    soren = make("Søren Kierkegaard")
    assert named("Ana-Maria Lopez leads the audit.", ana)
    assert named("Ana-María  López leads it.", ana)
    assert not named("See ana/maria/lopez.txt", ana)
    assert named("Soren Kierkegaard wrote that.", soren)
    assert named("SØREN KIERKEGAARD wrote that.", soren)


def test_a_name_in_an_email_or_url_is_no_mention() -> None:
    assert not named("Write to jane.doe@example.com for access.", JANE)
    assert not named("Profile: https://example.com/jane-doe", JANE)
    assert named("Jane Doe's assistant called.", JANE)


def test_a_surname_longer_than_the_known_one_makes_a_lookalike_not_a_mention() -> None:
    finding = find_in_prose("Jane Doerr joined the data team.", [JANE, ACME])

    assert finding.mentioned == []
    assert [(item.entity, item.seen) for item in finding.lookalikes] == [(JANE, "Jane Doerr")]


@pytest.mark.parametrize(
    ("text", "seen"),
    [
        ("Janet Doe called about the lease.", "Janet Doe"),
        ("Jane Smith runs the shop.", "Jane Smith"),
        ("Jane Doer sent the invoice.", "Jane Doer"),
    ],
)
def test_a_close_name_or_a_shared_first_name_is_a_lookalike(text: str, seen: str) -> None:
    finding = find_in_prose(text, [JANE])

    assert finding.mentioned == []
    assert [item.seen for item in finding.lookalikes] == [seen]


def test_a_first_name_alias_followed_by_another_surname_is_a_lookalike() -> None:
    mark = make("Mark Chen", "Mark")
    finding = find_in_prose("Mark Chenowith sent the file.", [mark])

    assert finding.mentioned == []
    assert [item.seen for item in finding.lookalikes] == ["Mark Chenowith"]
    assert named("Mark joined the call late.", mark)
    assert not named("Please mark the ticket as done.", mark)


def test_an_unrelated_name_and_a_short_one_word_label_make_no_lookalike() -> None:
    finding = find_in_prose("Devon and Bob Stone met Jim Doe.", [DEV, JANE])

    assert finding.mentioned == []
    assert finding.lookalikes == []
