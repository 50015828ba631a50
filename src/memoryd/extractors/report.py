"""What a heartbeat did: its report, its log line and its commit message.

Outcomes and their exit codes (docs/cli.md): `ok` and `nothing-new` 0; `failed` 1 (a chunk failed
for a reason of its own); `stopped` 75 (a transient reason: the LLM unreachable, the budget
spent, a shutdown); `unusable` 78 (the account, key, model or endpoint cannot be used: only the
operator can fix it, as a configuration error; `unusable` holds the problem). A source whose
path cannot be read (`sources_unreadable`) also makes an otherwise good heartbeat exit 78.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memoryd.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, EXIT_TEMPFAIL
from memoryd.extractors.counters import (
    NOTHING_FILED,
    ApplyCounters,
    counted_fields,
    describe_counts,
)
from memoryd.llm.base import UnusableLLMError
from memoryd.llm.prices import Usage
from memoryd.store.hosts import HOSTS_DIR
from memoryd.wording import plural

Outcome = Literal["ok", "nothing-new", "failed", "stopped", "unusable"]


@dataclass
class HeartbeatReport:
    run_id: str
    outcome: Outcome = "nothing-new"
    counters: ApplyCounters = field(default_factory=ApplyCounters)
    chunks: int = 0
    chunks_extracted: int = 0
    chunks_reused: int = 0
    chunks_empty: int = 0
    chunks_failed: int = 0
    chunks_quarantined: int = 0
    chunks_deferred: int = 0
    # Chunks sent ahead and asked again: a chunk applied meanwhile changed their context.
    chunks_reextracted: int = 0
    # More is waiting that this heartbeat left for its per-run read or spend share: the daemon
    # starts the next heartbeat at once (`memoryd.daemon.scheduler`).
    more_waiting: bool = False
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    commit: str | None = None
    foreign_commit: str | None = None
    stop_reason: str | None = None
    duration_ms: int = 0
    unusable: UnusableLLMError | None = None
    # source key -> why it could not be read: the operator must fix it (exit 78 when all else
    # went well); its files keep their read positions
    sources_unreadable: dict[str, str] = field(default_factory=dict)
    # Set by the job when pushing to the shared remote has failed `git.push_failure_limit`
    # jobs in a row: an otherwise successful heartbeat then exits 1.
    sync_problem: str | None = None

    @property
    def stopped_early(self) -> bool:
        """Whether the heartbeat stopped before the end of its chunks (the rest waits)."""
        return self.outcome in ("stopped", "unusable")

    @property
    def exit_code(self) -> int:
        if self.outcome == "unusable":
            return EXIT_CONFIG
        if self.outcome == "stopped":
            return EXIT_TEMPFAIL
        if self.outcome == "failed":
            return EXIT_FAILED
        if self.sources_unreadable:
            return EXIT_CONFIG
        return EXIT_FAILED if self.sync_problem is not None else EXIT_OK

    def log_fields(self) -> dict[str, Any]:
        c = self.counters
        return {
            "run_id": self.run_id,
            "outcome": self.outcome,
            # the counters `describe_counts` words, under the same names
            **counted_fields(c),
            "items_skipped": c.items_skipped,
            "chunks": self.chunks,
            "chunks_extracted": self.chunks_extracted,
            "chunks_reused": self.chunks_reused,
            "chunks_empty": self.chunks_empty,
            "chunks_failed": self.chunks_failed,
            "chunks_quarantined": self.chunks_quarantined,
            "chunks_reextracted": self.chunks_reextracted,
            "more_waiting": self.more_waiting,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cache_read_tokens": self.usage.cache_read_input_tokens,
            "cache_write_tokens": self.usage.cache_creation_input_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "commit": self.commit,
            "stop_reason": self.stop_reason,
            "duration_ms": self.duration_ms,
            "sources_unreadable": sorted(self.sources_unreadable),
        }


def commit_message(counters: ApplyCounters, writes: Sequence[str] = ()) -> str:
    """`heartbeat: +7 facts, 2 superseded, 1 entity, 3 skills, 4 notes` (`describe_counts`).
    A commit that files nothing says what it holds instead: only read positions (this host's
    record under `.memoryd/hosts/`), or store files brought up to date (`writes`: its paths)."""
    described = describe_counts(counters)
    if described != NOTHING_FILED:
        return f"heartbeat: {described}"
    if all(path.startswith(f"{HOSTS_DIR}/") for path in writes):
        return f"heartbeat: read positions only, {NOTHING_FILED}"
    return f"heartbeat: {NOTHING_FILED}, {plural(len(writes), 'file')} brought up to date"
