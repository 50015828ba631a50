"""Properties of cleaning that hold for any text: bounded excerpts, no planted secret survives,
cleaning twice changes nothing."""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.sources._scrub import excerpt
from memoryd.sources.clean import clean_text, clean_turn
from memoryd.sources.model import Provenance, Role, Turn

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Pieces close to what cleaning looks for, so random texts hit the interesting paths.
PIECES = st.sampled_from(
    [
        "<thinking>",
        "</thinking>",
        "<system-reminder>",
        "</system-reminder>",
        "<command-name>",
        "</command-name>",
        "[Request interrupted by user]",
        "data:image/png;base64,",
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3",
        "password=",
        "token: ",
        "\n",
        "\n\n\n",
        " ",
        "[REDACTED:secret]",
        "[base64 dropped: 1 KB]",
        "sk-",
        "eyJ",
        "://u:",
        "@",
    ]
)
TEXTS = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(PIECES, st.text(max_size=12)), max_size=40).map("".join),
)


def fake_key(kind: str, seed: int) -> str:
    rng = random.Random(seed)  # noqa: S311 - fake keys need reproducibility only
    tail = "".join(rng.choice(string.ascii_letters) for _ in range(38)) + "4x"
    return {
        "github": "ghp_" + tail[:36],
        "openai": "sk-proj-" + tail,
        "google": "AIza" + tail[:35],
        "jwt": "eyJ" + tail[:20] + ".eyJ" + tail[10:] + "." + tail[:30],
        "aws": "AKIA" + tail[:16].upper().replace("X", "7"),
    }[kind]


def make_turn(role: Role, text: str) -> Turn:
    return Turn(role, text, datetime(2026, 1, 1, tzinfo=UTC), Provenance("f", (1, 1)))


@given(TEXTS, st.integers(0, 400))
@PROPERTY_SETTINGS
def test_an_excerpt_is_bounded_keeps_the_ends_and_is_stable(text: str, limit: int) -> None:
    cut, cut_bytes = excerpt(text, limit)

    assert len(cut) <= max(limit, 0) or cut == text
    if cut == text:
        assert cut_bytes == 0
    else:
        assert len(text) > limit
        head = cut.split("[… ", 1)[0].removesuffix("\n")
        assert text.startswith(head)
    assert excerpt(cut, limit) == (cut, 0)


@given(TEXTS)
@PROPERTY_SETTINGS
def test_clean_text_twice_is_clean_text_once(text: str) -> None:
    once = clean_text(text).text

    assert clean_text(once).text == once


@given(
    before=TEXTS,
    after=TEXTS,
    kind=st.sampled_from(["github", "openai", "google", "jwt", "aws"]),
    seed=st.integers(0, 2**32),
    role=st.sampled_from(["user", "assistant", "tool"]),
    limit=st.integers(0, 3000),
)
@PROPERTY_SETTINGS
def test_no_planted_key_survives_turn_cleaning(
    *, before: str, after: str, kind: str, seed: int, role: Role, limit: int
) -> None:
    key = fake_key(kind, seed)

    cleaned, _ = clean_turn(make_turn(role, f"{before}\n{key}\n{after}"), tool_output_chars=limit)

    assert cleaned is None or key[:16] not in cleaned.text


@given(TEXTS, st.sampled_from(["user", "assistant", "tool"]), st.integers(0, 400))
@PROPERTY_SETTINGS
def test_cleaning_a_turn_twice_changes_nothing(text: str, role: Role, limit: int) -> None:
    once, _ = clean_turn(make_turn(role, text), tool_output_chars=limit)

    if once is not None:
        assert clean_turn(once, tool_output_chars=limit)[0] == once
