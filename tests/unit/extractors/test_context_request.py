"""What an extraction request shows besides the transcript: known entities named in prose,
look-alikes marked as different entities, and the tacit lines already filed that bear on it.

The store is real (`memoryd init`'s code), the request is rendered by the real extractor from
the packaged prompts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.extractors import TACIT_FILE, make_chunk, make_store, open_session

from memoryd.extractors.apply import StoreSession
from memoryd.extractors.context import MAX_LOOKALIKES, build_context
from memoryd.extractors.extract import ChunkContext
from memoryd.extractors.llm_extractor import LLMExtractor
from memoryd.llm.base import ToolRequest, ToolResult
from memoryd.store.tacit import TACIT_SHOWN_CHARS, TACIT_SHOWN_LINES, add_tacit
from memoryd.worktree import UnitOfWork

TODAY_RULES = [
    "Never takes meetings before 10:00",
    "Prefers terse bullet summaries over prose",
    "Signs every git tag",
]


class NoClient:
    def call_tool(self, request: ToolRequest) -> ToolResult:  # pragma: no cover - never sent
        raise AssertionError("no request is sent in these tests")


@pytest.fixture
def session(tmp_path: Path) -> StoreSession:
    return open_session(UnitOfWork(make_store(tmp_path / "store")))


def context_for(session: StoreSession, *texts: str) -> ChunkContext:
    return build_context(
        make_chunk(*texts),
        tx=session.tx,
        catalog=session.catalog,
        facts=session.facts,
        max_facts=10,
        skills_index_path="agents/ops/skills-index.md",
        tacit_path=TACIT_FILE,
    )


def request_for(session: StoreSession, *texts: str) -> ToolRequest:
    extractor = LLMExtractor(NoClient(), model="m", max_tokens=1000, scrub=lambda s: s)
    return extractor.build_request(make_chunk(*texts), context_for(session, *texts))


def test_an_alias_inside_a_path_offers_no_entity(session: StoreSession) -> None:
    session.catalog.create("Dev Patel", "person", ["Dev"], today=make_chunk().day)

    assert context_for(session, "Mount /dev/sda1 and restart dev-server").known_entities == ""
    assert context_for(session, "Ask Dev about it").known_entities.startswith(
        "people/dev-patel: Dev Patel, person (also: Dev)"
    )


def test_a_lookalike_is_shown_as_a_different_entity_and_the_prompt_says_what_that_means(
    session: StoreSession,
) -> None:
    session.catalog.create("Jane Doe", "person", [], today=make_chunk().day)

    request = request_for(session, "Jane Doerr joined the data team today.")

    line = (
        "people/jane-doe: Jane Doe, person — not the same person as 'Jane Doerr' in this "
        "excerpt, unless the excerpt says so"
    )
    assert line in request.user_content.splitlines()
    assert "is a DIFFERENT entity" in request.user_content


def test_a_filed_tacit_rule_the_excerpt_restates_is_shown_in_the_user_message(
    session: StoreSession,
) -> None:
    add_tacit(session.tx, TACIT_FILE, TODAY_RULES)

    request = request_for(session, "Reminder: I don't do meetings before 10:00, ever.")

    lines = request.user_content.splitlines()
    assert "- Never takes meetings before 10:00" in lines
    assert "- Signs every git tag" not in lines  # shares no word with the excerpt
    assert "Do not file again" in request.user_content
    assert "Never takes meetings" not in request.system  # the cached prefix stays the same


def test_an_excerpt_sharing_no_word_with_the_tacit_file_shows_none(
    session: StoreSession,
) -> None:
    add_tacit(session.tx, TACIT_FILE, TODAY_RULES)

    assert context_for(session, "The build is green.").tacit == ""
    request = request_for(session, "The build is green.")
    assert "- Never takes meetings" not in request.user_content


def test_the_tacit_lines_shown_stay_within_their_bound_with_a_large_tacit_file(
    session: StoreSession,
) -> None:
    rules = [f"Rule {n}: reviews the meetings calendar of team {n}" for n in range(500)]
    add_tacit(session.tx, TACIT_FILE, [*rules, "Never takes meetings before 10:00"])

    shown = context_for(session, "No meetings before 10:00, never.").tacit

    lines = shown.splitlines()
    assert 0 < len(lines) <= TACIT_SHOWN_LINES
    assert sum(len(line) - 2 for line in lines) <= TACIT_SHOWN_CHARS
    assert lines[0] == "- Never takes meetings before 10:00"  # shares the most words


def test_each_section_of_a_shared_request_shows_its_own_tacit_lines(
    session: StoreSession,
) -> None:
    add_tacit(session.tx, TACIT_FILE, TODAY_RULES)
    texts = ("No meetings before 10:00, please.", "Sign the git tag for the release.")
    chunks = [make_chunk(text, session=f"s{n}") for n, text in enumerate(texts)]
    contexts = [context_for(session, text) for text in texts]
    extractor = LLMExtractor(NoClient(), model="m", max_tokens=1000, scrub=lambda s: s)

    content = extractor.build_sections_request(chunks, contexts).user_content

    first, second = content.index("s1: conversation"), content.index("s2: conversation")
    assert "Never takes meetings before 10:00" in content[first:second]
    assert "Signs every git tag" in content[second:]
    assert "Signs every git tag" not in content[first:second]
    assert "Do not file again a tacit rule" in content


def test_lookalike_lines_are_bounded_when_many_entities_share_a_first_name(
    session: StoreSession,
) -> None:
    for number in range(12):
        session.catalog.create(f"Jane Person{number:02d}", "person", [], today=make_chunk().day)

    known = context_for(session, "Jane Smith called.").known_entities.splitlines()

    assert len(known) == MAX_LOOKALIKES
    assert all("not the same person as 'Jane Smith'" in line for line in known)
