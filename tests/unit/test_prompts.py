"""Prompt files: headers checked, placeholders exact, rendering strict."""

from __future__ import annotations

import pytest

from memoryd.prompts import PromptError, check_prompts, load_prompt, parse_prompt


def test_packaged_prompts_load_with_versions() -> None:
    refs = check_prompts()
    assert refs[:2] == ["extract-system@4", "extract-user@2"]
    assert {ref.split("@")[0] for ref in refs} == {
        "extract-system",
        "extract-user",
        "extract-sections",
        "extract-section",
        "summary-system",
        "summary-user",
        "consolidate-system",
        "consolidate-user",
    }


def test_rendering_needs_exactly_the_declared_variables() -> None:
    prompt = load_prompt("extract-user")
    with pytest.raises(PromptError, match="missing"):
        prompt.render(agent="a")


def test_values_are_not_expanded_twice() -> None:
    prompt = parse_prompt("p", "<!--\nname: p\nversion: 2\nvariables: a, b\n-->\n{{a}}|{{b}}")
    assert prompt.render(a="{{b}}", b="x") == "{{b}}|x"
    assert prompt.ref == "p@2"


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("no header", "missing"),
        ("<!--\nname: q\nversion: 1\nvariables:\n-->\n", "header names"),
        ("<!--\nname: p\nversion: one\nvariables:\n-->\n", "whole number"),
        ("<!--\nname: p\nversion: 1\nvariables: a\n-->\n{{b}}", "declares"),
    ],
)
def test_malformed_headers_are_refused(source: str, fragment: str) -> None:
    with pytest.raises(PromptError, match=fragment):
        parse_prompt("p", source)


def test_missing_prompt_file_is_a_clear_error() -> None:
    with pytest.raises(PromptError, match="not installed"):
        load_prompt("no-such-prompt")
