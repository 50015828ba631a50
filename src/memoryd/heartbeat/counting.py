"""A dry run's requests counted by the endpoint's own tokenizer (`heartbeat --dry-run --online`).

memoryd's own token estimate (`memoryd.llm.tokens`) is cheap and offline but only calibrated per
model family. Online, the dry run builds every request a heartbeat would send now, exactly as the
extractor builds it: the chunk (or the sections of a shared call) with the context the store
offers now (known entities and their facts, the skills index), the system prompt and the tool,
and asks the endpoint to count it (`messages/count_tokens`, which bills nothing). Nothing is sent
for extraction and nothing is written.

The store is read as it is: a real heartbeat files each chunk before building the next one's
context, so its later chunks may be shown a little more than the dry run counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

from memoryd.extractors.apply import StoreSession
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.context import build_context
from memoryd.extractors.extract import ChunkContext
from memoryd.extractors.llm_extractor import LLMExtractor
from memoryd.gitrepo import GitStore
from memoryd.heartbeat.run import HeartbeatOptions
from memoryd.llm.base import ToolRequest
from memoryd.store.skills import INDEX_FILE, agent_folder
from memoryd.worktree import UnitOfWork


class TokenCounter(Protocol):
    """What counts a request's input tokens (the Anthropic adapter's `count_tokens`)."""

    def count_tokens(self, request: ToolRequest) -> int: ...


def count_calls(
    calls: Sequence[Sequence[Chunk]],
    *,
    git: GitStore,
    options: HeartbeatOptions,
    clock: Callable[[], datetime],
    extractor: LLMExtractor,
    counter: TokenCounter,
) -> list[int]:
    """The input tokens of each call's request, as `counter` counts them, in order. Raise the
    counter's LLMError when the endpoint cannot count."""
    session = StoreSession.open(
        UnitOfWork(git),
        skills_dir=options.skills_dir,
        tacit_file=options.tacit_file,
        today=clock().astimezone(options.zone).date(),
        host_code=options.host_code,
    )
    counts: list[int] = []
    for call in calls:
        contexts = [_context(chunk, session, options) for chunk in call]
        if len(call) == 1:
            request = extractor.build_request(call[0], contexts[0], "")
        else:
            request = extractor.build_sections_request(call, contexts, "")
        counts.append(counter.count_tokens(request))
    return counts


def _context(chunk: Chunk, session: StoreSession, options: HeartbeatOptions) -> ChunkContext:
    return build_context(
        chunk,
        tx=session.tx,
        catalog=session.catalog,
        facts=session.facts,
        max_facts=options.context_facts,
        skills_index_path=f"{agent_folder(options.skills_dir, chunk.agent)}/{INDEX_FILE}",
        tacit_path=session.tacit_file,
    )
