"""Configuration files for tests: one agent, `ops`, reading JSON Lines transcripts.

Most daemon and CLI tests need the same small configuration and differ only in the `[llm]` table
and a table or two more; writing it once keeps each test about what it changes.
"""

from __future__ import annotations

from pathlib import Path


def ops_config(
    *,
    llm: str,
    store: Path | str = "store",
    state: Path | str = "state",
    logs: Path | str = "logs",
    extra: str = "",
) -> str:
    """The TOML text: `llm` is the body of the `[llm]` table, `extra` more tables (e.g.
    `[schedule]`); relative paths are taken from the file's folder. No daily spending limit, and
    a backfill of everything, so a test's transcripts are all read at once."""
    return f"""
[store]
path = "{store}"
[state]
path = "{state}"
[llm]
{llm.strip()}
[budget]
daily_usd = 0
[backfill]
since = "all"
{extra.strip()}
[[agents]]
name = "ops"
  [[agents.sources]]
  format = "jsonl"
  path = "{logs}"
"""


def anthropic_llm(base_url: str, *more: str) -> str:
    """An `[llm]` body for the fake Anthropic server: one attempt per call, so a test's error
    answers are seen at once, and one call per conversation, so that calls count chunks
    (conversations of different days would share one otherwise); `more` are further
    `key = value` lines."""
    lines = ('provider = "anthropic"', f'base_url = "{base_url}"', "max_attempts = 1")
    shared = any(line.startswith("sections_per_call") for line in more)
    return "\n".join((*lines, *(() if shared else ("sections_per_call = 1",)), *more))
