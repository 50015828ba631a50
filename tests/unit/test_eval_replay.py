"""The replay key: a request is recognised by its tool and fenced excerpt, whatever the prompt
around it says and whatever nonce fenced it."""

from __future__ import annotations

from typing import Any

from tests.fakes.replay import request_key


def _body(prompt: str, nonce: str, excerpt: str, tool: str = "record_memories") -> dict[str, Any]:
    text = f"{prompt}\n<<<{nonce} BEGIN>>>\n{excerpt}\n<<<{nonce} END>>>\nCall the tool."
    return {
        "tools": [{"name": tool}],
        "tool_choice": {"type": "tool", "name": tool},
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    }


def test_the_key_ignores_the_prompt_and_the_nonce_but_not_the_excerpt_or_tool() -> None:
    key = request_key(
        _body("Known entities: (none)", "MEMORYD-AAAA1111BBBB2222", "[09:00] user:\nhi")
    )
    assert key == request_key(
        _body("Known entities: jane-doe-001: CTO", "MEMORYD-CCCC3333DDDD4444", "[09:00] user:\nhi")
    )
    assert key != request_key(_body("", "MEMORYD-AAAA1111BBBB2222", "[09:00] user:\nhello"))
    assert key != request_key(_body("", "MEMORYD-AAAA1111BBBB2222", "[09:00] user:\nhi", "other"))


def test_a_summary_request_is_keyed_by_the_fact_ids_it_shows() -> None:
    def summary(text: str) -> dict[str, Any]:
        return {
            "tool_choice": {"type": "tool", "name": "write_summary"},
            "messages": [{"role": "user", "content": text}],
        }

    key = request_key(summary("Entity people/jane-doe\n- [jane-doe-001] CTO\n- [jane-doe-002] x"))
    assert key == "write_summary\nfacts jane-doe-001 jane-doe-002"
    assert key == request_key(summary("Reworded prompt.\njane-doe-002: x\njane-doe-001: CTO"))
    assert key != request_key(summary("- [jane-doe-001] CTO\n- [jane-doe-003] CEO"))
