"""The hook formats: what the model is given stays under each harness's limit and the token
budget, the cut keeps every section's first lines, and the last line says what is missing."""

from __future__ import annotations

import json
from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.llm.base import estimate_tokens
from memoryd.reading.context import HOW_TO_GET, Section, fit
from memoryd.reading.formats import (
    CLAUDE_CODE_CAP,
    CODEX_CAP,
    ceiling_for,
    limit_name,
    render,
    utf16_length,
    worst_case_tokens,
)

TODAY = date(2026, 3, 10)


def modest_store() -> list[Section]:
    """A MEMORY.md of about 6 KB first, then skills, a dozen entities and two notes."""
    habits = "\n".join(
        f"- Habit {n}: asks before touching production database {n}." for n in range(90)
    )
    sections = [
        Section("How the user works", "MEMORY.md", habits, "tacit"),
        Section("Skills of ops", "agents/ops/skills.md", "- deploy: run make deploy", "skills"),
    ]
    for number in range(12):
        summary = " ".join(f"Works on project {i} [p{number}-{i:03d}]." for i in range(1, 30))
        path = f"life/areas/people/p{number}/summary.md"
        sections.append(Section(f"P{number}", path, summary, "entity"))
    for day in ("2026-03-10", "2026-03-09"):
        note = "\n".join(f"- {h:02d}:00 met P{h % 12} about the launch" for h in range(8, 20))
        sections.append(Section(day, f"memory/{day}.md", note, "note"))
    return sections


def test_claude_code_keeps_every_section_under_its_character_limit() -> None:
    sections = modest_store()
    ceiling = ceiling_for("claude-code")
    bundle = fit(
        sections, agent="ops", today=TODAY, budget=4000, ceiling=ceiling,
        limit_label=limit_name("claude-code"),
    )  # fmt: skip
    assert ceiling is CLAUDE_CODE_CAP and CLAUDE_CODE_CAP.amount < 10_000
    assert utf16_length(bundle.text) <= 9_500 and estimate_tokens(bundle.text) <= 4000
    assert utf16_length(bundle.text) > 8_500  # the room is used
    assert bundle.included == [section.path for section in sections]  # none crowded out
    assert "MEMORY.md" in bundle.cut
    assert "[p11-001]" in bundle.text and "met P0 about the launch" in bundle.text
    last = bundle.text.splitlines()[-1]
    assert last.startswith("Left out to fit the budget and Claude Code's hook limit: ")
    assert "the rest of MEMORY.md" in last and last.endswith(f"Get them with {HOW_TO_GET}.")
    assert render("claude-code", bundle.text, {}) == bundle.text


def test_codex_gets_its_session_start_json_under_its_token_limit() -> None:
    bundle = fit(modest_store(), agent="ops", today=TODAY, budget=4000, ceiling=CODEX_CAP)
    assert worst_case_tokens(bundle.text) <= CODEX_CAP.amount == 2_400
    assert len(bundle.text) <= 7_200
    printed = json.loads(render("codex", bundle.text, {}))
    assert printed == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": bundle.text}
    }
    assert "memory/2026-03-10.md" in bundle.included


def test_the_plain_bundle_is_cut_to_the_budget_only_and_json_carries_the_metadata() -> None:
    bundle = fit(modest_store(), agent="ops", today=TODAY, budget=4000)
    assert 3_300 < estimate_tokens(bundle.text) <= 4000
    assert len(bundle.text) > 10_000  # tokens alone allow more than a hook may print
    shown = json.loads(render("json", bundle.text, {"cut": bundle.cut}))
    assert shown == {"cut": bundle.cut, "text": bundle.text}


def test_a_long_paragraph_is_cut_after_a_sentence() -> None:
    paragraph = " ".join(f"Sentence {n} is here." for n in range(200))
    bundle = fit([Section("P", "p/summary.md", paragraph, "entity")], agent="a", today=TODAY,
                 budget=150)  # fmt: skip
    kept = bundle.text.split("\n\n")[2]
    assert kept.startswith("Sentence 0 is here.\nSentence 1 is here.")
    assert kept.rstrip().endswith("is here.") and bundle.cut == ["p/summary.md"]


texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.just("\n"),
    max_size=3000,
)


@settings(max_examples=60, deadline=None)
@given(
    bodies=st.lists(texts, min_size=1, max_size=8),
    budget=st.integers(min_value=1, max_value=6000),
    output_format=st.sampled_from(["plain", "claude-code", "codex"]),
)
def test_no_bundle_exceeds_its_budget_or_its_ceiling(
    bodies: list[str], budget: int, output_format: str
) -> None:
    kinds = ["tacit", "skills", "entity", "entity", "note", "routine", "entity", "note"]
    sections = [Section(f"S{n}", f"s/{n}.md", body, kinds[n]) for n, body in enumerate(bodies)]
    ceiling = ceiling_for(output_format)
    bundle = fit(sections, agent="ops", today=TODAY, budget=budget, ceiling=ceiling)
    assert estimate_tokens(bundle.text) <= budget
    if ceiling is not None:
        assert ceiling.measure(bundle.text) <= ceiling.amount
    assert bundle.text.endswith("\n")
    missing = bundle.cut or bundle.left_out
    if budget >= 40:  # room for the last line: below it, no more than the budget is all
        assert bundle.text.splitlines()[-1].startswith("Left out to fit") == bool(missing)


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(min_value=1, max_value=400), paths=st.integers(1, 40))
def test_a_small_budget_is_never_exceeded_however_many_sections_are_left_out(
    budget: int, paths: int
) -> None:
    sections = [
        Section(f"P{n}", f"life/areas/people/a-person-with-a-long-name-{n}/summary.md",
                f"Works on project {n} [p-{n:03d}].", "entity")
        for n in range(paths)
    ]  # fmt: skip
    bundle = fit(sections, agent="ops", today=TODAY, budget=budget)
    assert estimate_tokens(bundle.text) <= budget
    if budget >= 40:
        assert bundle.text.splitlines()[-1].startswith("Left out to fit") == bool(bundle.left_out)


def test_context_at_budgets_50_to_400_stays_within_each() -> None:
    for budget in range(50, 401, 10):
        bundle = fit(modest_store(), agent="ops", today=TODAY, budget=budget)
        assert bundle.tokens == estimate_tokens(bundle.text) <= budget, budget
