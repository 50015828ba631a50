"""A journal as `journalctl -u memoryd -o cat` prints it, captured from real `memoryd` runs.

Every line comes from a real `memoryd` process against the fake Anthropic server (real SDK,
real HTTP, real git store, real state database), in the order an operator's day would bring
them: `check` (plain text on stdout), a heartbeat that files a fact and pays for it, a chunk that
fails three heartbeats in a row and is quarantined, the credit running out, a daily budget
reached, a state database that is not one, and the weekly rewrite. Each run's stdout and stderr
both go to the journal, as under systemd, with systemd's own plain lines between runs: the
journal mixes JSON lines with plain ones, as a real one does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.anthropic_wire import Error, credit_too_low
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.support.check_online import run, write_config

STARTED = "Started memoryd.service - memoryd: long-term memory for AI agents (heartbeat daemon)."
STOPPED = "memoryd.service: Deactivated successfully."
# What a daily ceiling below one call's price looks like in the configuration.
TINY_DAILY_BUDGET = "daily_usd = 0.000001"


@dataclass(frozen=True)
class Journal:
    """The captured text (`path`), its JSON lines, and the plain lines mixed in."""

    path: Path
    events: list[dict[str, object]]
    plain: list[str]

    def named(self, event: str) -> list[dict[str, object]]:
        return [line for line in self.events if line["event"] == event]


def capture_journal(folder: Path, server: FakeAnthropicServer) -> Journal:
    """Run memoryd in `folder` against `server` as described above; write the journal to
    `folder/journal.txt` and return it."""
    write_config(folder, server.base_url)
    lines: list[str] = [STARTED]

    def memoryd(*args: str) -> int:
        code, out, logs = run(folder, *args)
        lines.extend(json.dumps(line) for line in logs)
        lines.extend(out.splitlines())
        return code

    def new_transcript_line(text: str, index: int) -> None:
        with (folder / "logs" / "a.jsonl").open("a", encoding="utf-8") as log:
            entry = {"role": "user", "content": text, "timestamp": f"2026-03-0{index}T09:00:00Z"}
            log.write(json.dumps(entry) + "\n")

    assert memoryd("check") == 0
    assert memoryd("heartbeat") == 0
    new_transcript_line("Jane Doe moved to Lisbon", 2)
    for _ in range(3):  # one chunk, failed three heartbeats in a row: quarantined
        server.fail_next(Error(400, "invalid_request_error", "messages.0: this request is refused"))
        memoryd("heartbeat")
    new_transcript_line("Jane Doe speaks at the Lisbon summit", 3)
    server.fail_next(credit_too_low())
    memoryd("heartbeat")
    config = folder / "memoryd.toml"
    unlimited = config.read_text(encoding="utf-8")
    config.write_text(unlimited.replace("daily_usd = 0", TINY_DAILY_BUDGET), encoding="utf-8")
    memoryd("heartbeat")
    config.write_text(unlimited, encoding="utf-8")
    (folder / "state" / "state.db").write_bytes(b"not a database\n")
    assert memoryd("heartbeat") == 0
    lines.append(STOPPED)
    memoryd("rewrite")
    path = folder / "journal.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    events = [json.loads(line) for line in lines if line.startswith("{")]
    plain = [line for line in lines if not line.startswith("{")]
    return Journal(path, events, plain)
