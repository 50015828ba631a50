"""Cleaning of turns and conversations: redaction, base64 drops, scaffolding, tool excerpts,
trusted flags, dropped turns and the stats they report."""

from __future__ import annotations

import base64
import random
import string
import time
from datetime import UTC, datetime

import pytest

from memoryd.sources._scrub import excerpt, strip_scaffolding
from memoryd.sources.clean import (
    DEFAULT_TOOL_OUTPUT_CHARS,
    CleanStats,
    clean_conversation,
    clean_text,
    clean_turn,
)
from memoryd.sources.model import Conversation, Provenance, Role, Turn

WHEN = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


def seeded(seed: object) -> random.Random:
    return random.Random(str(seed))  # noqa: S311 - fake payloads need reproducibility only


def fake_github_token(seed: object = "gh") -> str:
    rng = seeded(seed)
    return "ghp_" + "".join(rng.choice(string.ascii_letters) for _ in range(34)) + "7Q"


def payload(size: int, seed: object = "payload") -> str:
    """Base64 of `size` random bytes, as an image or a PDF would be embedded."""
    return base64.b64encode(seeded(seed).randbytes(size)).decode("ascii")


def make_turn(role: Role, text: str, *, trusted: bool = True, line: int = 1) -> Turn:
    return Turn(role, text, WHEN, Provenance("/logs/s.jsonl", (line, line)), trusted=trusted)


def cleaned_text(turn: Turn, **options: object) -> str:
    cleaned, _ = clean_turn(turn, **options)  # type: ignore[arg-type]
    assert cleaned is not None
    return cleaned.text


# --- secrets -------------------------------------------------------------------------------


def test_secrets_in_a_turn_are_redacted_and_counted() -> None:
    token = fake_github_token()
    turn = make_turn("user", f"use {token} and password=hunter22 please")

    cleaned, stats = clean_turn(turn)

    assert cleaned is not None
    assert cleaned.text == "use [REDACTED:github] and password=[REDACTED:password] please"
    assert stats.redactions == {"github": 1, "password": 1}


def test_extra_patterns_apply_to_turns_and_count_as_custom() -> None:
    turn = make_turn("assistant", "the badge is ACME-7781-X")

    cleaned, stats = clean_turn(turn, extra_patterns=[r"ACME-\d{4}-[A-Z]"])

    assert cleaned is not None
    assert cleaned.text == "the badge is [REDACTED:custom]"
    assert stats.redactions == {"custom": 1}


def test_clean_text_redacts_what_an_llm_echoes_and_keeps_the_layout() -> None:
    token = fake_github_token("llm")
    answer = f"  - Deploy key: {token}\n\n\n  - next item  "

    result = clean_text(answer)

    assert result.text == "  - Deploy key: [REDACTED:github]\n\n\n  - next item  "
    assert result.stats.redactions == {"github": 1}


# --- base64 --------------------------------------------------------------------------------


def test_a_data_uri_becomes_a_marker_with_its_size() -> None:
    data = payload(9000)
    turn = make_turn("user", f"look: ![shot](data:image/png;base64,{data}) done")

    cleaned, stats = clean_turn(turn)

    assert cleaned is not None
    assert cleaned.text == "look: ![shot]([base64 dropped: 12 KB]) done"
    assert stats.base64_bytes == len("data:image/png;base64,") + len(data)


def test_a_long_base64_run_becomes_a_marker_and_a_wrapped_one_becomes_one_marker() -> None:
    single = payload(3000, "single")
    wrapped = "\n".join(payload(6000, "wrapped")[i : i + 76] for i in range(0, 8000, 76))

    text = clean_text(f"blob {single}\nmime:\n{wrapped}\nend").text

    assert text == "blob [base64 dropped: 4 KB]\nmime:\n[base64 dropped: 8 KB]\nend"


def test_a_base64_run_inside_a_json_string_is_dropped() -> None:
    data = payload(600, "json")
    text = clean_text('{"type": "image", "data": "' + data + '"}').text

    assert text == '{"type": "image", "data": "[base64 dropped: 800 B]"}'


@pytest.mark.parametrize(
    "text",
    [
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" * 5,
        "/usr/lib/python3/dist-packages/some/very/long/path/that/goes/on/" * 6,
        "a short one: SGVsbG8gd29ybGQhIFRoaXMgaXMgYmFzZTY0Lg==",
        "-" * 400,
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ" * 20,
    ],
)
def test_hashes_paths_rulers_and_short_base64_are_kept(text: str) -> None:
    result = clean_text(text)

    assert result.text == text
    assert result.stats.base64_bytes == 0


# --- scaffolding ---------------------------------------------------------------------------


def test_thinking_and_system_reminders_are_dropped() -> None:
    text = (
        "<thinking>I should check the tests first.</thinking>The tests pass.\n\n"
        "<system-reminder>\nWhenever you read a file, consider whether it is malicious.\n"
        "</system-reminder>\n"
    )

    cleaned, stats = clean_turn(make_turn("assistant", text))

    assert cleaned is not None
    assert cleaned.text == "The tests pass."
    assert stats.scaffolding_bytes > 0


def test_slash_command_markup_keeps_what_the_user_typed() -> None:
    text = (
        "<command-message>orchestrator is running…</command-message>\n"
        "<command-name>/orchestrator</command-name>\n"
        "<command-args>create TODO app by Next.js</command-args>"
    )

    assert cleaned_text(make_turn("user", text)) == "/orchestrator\ncreate TODO app by Next.js"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>\nHi", "Hi"),
        ("[Request interrupted by user]", ""),
        ("[[reply_to_current]] Sure, done.", "Sure, done."),
        ("<task-notification>\n<status>failed</status>\n</task-notification>ok", "ok"),
        ("Use a <thinking> tag to think.", "Use a <thinking> tag to think."),
        ("<thin<thinking>x</thinking>king>y</thinking>z", "z"),
    ],
)
def test_scaffolding_cases(text: str, expected: str) -> None:
    stripped, removed = strip_scaffolding(text)

    assert stripped.strip() == expected
    assert removed == len(text.encode()) - len(stripped.encode())
    assert strip_scaffolding(stripped) == (stripped, 0)


def test_many_unclosed_openers_are_stripped_in_linear_time() -> None:
    text = "<thinking>" * 200_000 + "<system-reminder>" * 100_000

    stripped, removed = strip_scaffolding(text)

    assert stripped == text
    assert removed == 0


# --- tool output ---------------------------------------------------------------------------


def numbered_lines(count: int) -> str:
    return "\n".join(f"line {n:05d} of the build log" for n in range(count))


def test_tool_output_is_cut_to_head_and_tail_within_the_limit() -> None:
    text = numbered_lines(2000)
    turn = make_turn("tool", text, trusted=True)

    cleaned, stats = clean_turn(turn, tool_output_chars=2000)

    assert cleaned is not None
    assert len(cleaned.text) <= 2000
    assert cleaned.text.startswith("line 00000 of the build log\n")
    assert cleaned.text.endswith("line 01999 of the build log")
    head, marker, tail = cleaned.text.partition("\n[… ")
    cut = int(marker and tail.split(" ", 1)[0])
    assert len(head) + cut + len(tail.split("…]\n", 1)[1]) == len(text)
    assert stats.tool_output_bytes == cut
    assert cleaned.trusted is False


def test_the_default_tool_limit_is_the_configured_default() -> None:
    cleaned = cleaned_text(make_turn("tool", numbered_lines(5000)))

    assert len(cleaned) <= DEFAULT_TOOL_OUTPUT_CHARS == 2000


def test_user_and_assistant_text_is_never_cut() -> None:
    text = numbered_lines(500)

    assert cleaned_text(make_turn("user", text), tool_output_chars=100) == text
    assert cleaned_text(make_turn("assistant", text), tool_output_chars=100) == text


def test_a_zero_limit_drops_tool_output() -> None:
    cleaned, stats = clean_turn(make_turn("tool", "some output"), tool_output_chars=0)

    assert cleaned is None
    assert stats.turns_dropped == 1


def test_a_secret_in_the_cut_part_or_on_the_cut_never_shows() -> None:
    token = fake_github_token("cut")
    for position in range(900, 1100, 7):
        text = "x" * position + token + "y" * 3000
        result = cleaned_text(make_turn("tool", text), tool_output_chars=2000)
        assert token[:12] not in result
        assert "[REDACTED:github" not in result or "[REDACTED:github]" in result


def test_a_cut_never_splits_a_marker() -> None:
    words = " ".join(f"w{n}" for n in range(300))
    marked = (words + " [REDACTED:private-key] [base64 dropped: 3 KB] ") * 8

    for limit in range(200, 900, 13):
        cut, _ = excerpt(marked, limit)
        assert len(cut) <= limit
        assert cut.count("[REDACTED:") == cut.count("[REDACTED:private-key]")
        assert cut.count("[base64") == cut.count("[base64 dropped: 3 KB]")


def test_cutting_an_excerpt_again_changes_nothing() -> None:
    once, _ = excerpt(numbered_lines(3000), 1500)

    assert excerpt(once, 1500) == (once, 0)


def test_a_cut_that_makes_a_value_end_its_line_redacts_it() -> None:
    # `token: 000;` is no secret (the value does not end its line); cut after `000` it would be.
    cleaned, stats = clean_turn(make_turn("tool", "TOKEN:000;"), tool_output_chars=9)

    assert cleaned is not None
    assert "000" not in cleaned.text
    assert stats.redactions == {"secret": 1}


def test_a_limit_smaller_than_the_marker_keeps_the_head_only() -> None:
    assert excerpt("abcdefghijklmnopqrstuvwxyz" * 3, 10) == ("abcdefghij", 68)


# --- trusted flags, dropped turns, conversations -------------------------------------------


@pytest.mark.parametrize(
    ("role", "given", "expected"),
    [
        ("user", False, True),
        ("assistant", False, True),
        ("tool", True, False),
        ("tool", False, False),
    ],
)
def test_trusted_is_set_by_role_alone(role: Role, given: bool, expected: bool) -> None:
    cleaned, _ = clean_turn(make_turn(role, "text", trusted=given))

    assert cleaned is not None
    assert cleaned.trusted is expected


def test_a_conversation_keeps_order_drops_empty_turns_and_sums_stats() -> None:
    token = fake_github_token("conversation")
    conversation = Conversation(
        agent="coder",
        session_id="s1",
        source_format="claude-code",
        turns=(
            make_turn("user", f"my token is {token}", line=1),
            make_turn("assistant", "<thinking>only thoughts</thinking>", line=2),
            make_turn("tool", numbered_lines(400), line=3),
            make_turn("assistant", "   \n\n  ", line=4),
            make_turn("assistant", f"noted, {token}", line=5),
        ),
        title=f"Set up {token}",
        metadata={"cwd": "/w", "note": "password=hunter22"},
    )

    cleaned, stats = clean_conversation(conversation, tool_output_chars=500)

    assert [t.provenance.lines[0] for t in cleaned.turns] == [1, 3, 5]
    assert [t.text for t in cleaned.turns][::2] == [
        "my token is [REDACTED:github]",
        "noted, [REDACTED:github]",
    ]
    assert cleaned.title == "Set up [REDACTED:github]"
    assert cleaned.metadata == {"cwd": "/w", "note": "password=[REDACTED:password]"}
    assert (cleaned.agent, cleaned.session_id, cleaned.source_format) == (
        "coder",
        "s1",
        "claude-code",
    )
    assert stats.redactions == {"github": 3, "password": 1}
    assert stats.turns_dropped == 2
    assert stats.tool_output_bytes > 0
    assert stats.bytes_dropped == (
        stats.scaffolding_bytes + stats.base64_bytes + stats.tool_output_bytes
    )


def test_stats_add_up_and_give_stable_log_fields() -> None:
    first = CleanStats(redactions={"jwt": 1, "github": 2}, base64_bytes=10, turns_dropped=1)
    second = CleanStats(redactions={"github": 1}, scaffolding_bytes=5, tool_output_bytes=7)

    total = first + second

    assert total.redactions == {"github": 3, "jwt": 1}
    assert total.log_fields() == {
        "redactions": {"github": 3, "jwt": 1},
        "bytes_dropped": 22,
        "turns_dropped": 1,
    }
    assert list(total.log_fields()["redactions"]) == ["github", "jwt"]  # type: ignore[call-overload]


def test_cleaning_is_deterministic() -> None:
    text = f"{fake_github_token()} <thinking>x</thinking> {payload(2000)} " + numbered_lines(300)
    turn = make_turn("tool", text)

    assert clean_turn(turn) == clean_turn(turn)


ADVERSARIAL = {
    "data uri prefixes": "data:" * 200_000,
    "data uri parameters": ("data:image/png" + ";a=b" * 9) * 20_000,
    "almost base64 lines": ("A" * 15 + "\n") * 62_000,
    "wrapped base64": ("Aa1" * 25 + "\n") * 13_000,
    "crossed tags": "<thinking>x</system-reminder>" * 34_000,
    "reply tag openers": "[[reply_to:" * 90_000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_a_one_megabyte_adversarial_text_is_cleaned_in_seconds(name: str) -> None:
    started = time.perf_counter()

    clean_text(ADVERSARIAL[name])

    assert time.perf_counter() - started < 5.0
