"""The extractor that asks a model (`LLMExtractor`), with forced tool use.

The stable prefix (system prompt and tool definition) is the same for every chunk so it is
cached, and the variable part carries the chunk's context and transcript inside delimiters
derived from a fresh nonce the transcript does not contain. An answer that does not validate is
asked for once more with the validation errors shown; a second invalid answer raises
`InvalidAnswerError` and nothing of the chunk is written. A refusal (`stop_reason` "refusal") is
about this content: it is not asked again, and its `InvalidAnswerError` says `about_content`, so
the heartbeat never counts it as a sign that the model cannot do the task. Several short chunks
of one agent (of any days) can be asked in one call, each in its own section
(`extract_sections`, `memoryd.extractors.sections`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import ValidationError

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import (
    REFUSAL,
    ChunkContext,
    Extraction,
    InvalidAnswerError,
    RetryCheck,
    RetryRefusedError,
    Scrubber,
    retry_allowed,
    scrub_answer,
)
from memoryd.llm.base import LLMClient, ToolRequest, ToolResult, ToolSpec
from memoryd.llm.prices import Usage

if TYPE_CHECKING:
    from memoryd.extractors.contract import RecordMemories
    from memoryd.prompts import Prompt

# The tool contract (pydantic models), the prompts and the section helpers are imported where a
# chunk is extracted, not with this module: a heartbeat with nothing new builds its extractor
# but never asks it, and must not pay for them. Hence the imports marked PLC0415.


def record_memories_tool() -> ToolSpec:
    from memoryd.extractors.contract import (  # noqa: PLC0415 - see the top
        RECORD_MEMORIES_DESCRIPTION,
        RECORD_MEMORIES_TOOL,
        RecordMemories,
    )
    from memoryd.llm.schema import tool_input_schema  # noqa: PLC0415

    return ToolSpec(
        name=RECORD_MEMORIES_TOOL,
        description=RECORD_MEMORIES_DESCRIPTION,
        input_schema=tool_input_schema(RecordMemories, lean=True),
    )


def make_nonce(transcript: str, token: Callable[[int], str] = secrets.token_hex) -> str:
    """A delimiter marker the transcript does not contain, so the text cannot close its fence."""
    while True:
        nonce = f"MEMORYD-{token(8).upper()}"
        if nonce not in transcript:
            return nonce


class LLMExtractor:
    """Extraction through a model with forced tool use."""

    def __init__(
        self,
        client: LLMClient,
        *,
        model: str,
        max_tokens: int,
        scrub: Scrubber,
        token: Callable[[int], str] = secrets.token_hex,
    ) -> None:
        self._client = client
        self._model = model
        self._max_tokens = max_tokens
        self._scrub = scrub
        self._token = token

    # The prompts and the tool are loaded on first use (see the imports at the top).
    @cached_property
    def _system(self) -> Prompt:
        return _load_prompt("extract-system")

    @cached_property
    def _user(self) -> Prompt:
        return _load_prompt("extract-user")

    @cached_property
    def _sections(self) -> Prompt:
        return _load_prompt("extract-sections")

    @cached_property
    def _section(self) -> Prompt:
        return _load_prompt("extract-section")

    @cached_property
    def _tool(self) -> ToolSpec:
        return record_memories_tool()

    @property
    def prompt_refs(self) -> tuple[str, ...]:
        return (self._system.ref, self._user.ref, self._sections.ref, self._section.ref)

    def build_request(
        self, chunk: Chunk, context: ChunkContext, correction: str = ""
    ) -> ToolRequest:
        transcript = chunk.render()
        user_content = self._user.render(
            agent=chunk.agent,
            routine=chunk.routine or "(none)",
            date=chunk.day.isoformat(),
            known_entities=context.known_entities or "(none)",
            skills_index=context.skills_index or "(empty)",
            tacit=context.tacit or "(none)",
            nonce=make_nonce(
                transcript + context.known_entities + context.skills_index + context.tacit,
                self._token,
            ),
            transcript=transcript,
        )
        return self._request(user_content, correction)

    def build_sections_request(
        self,
        chunks: Sequence[Chunk],
        contexts: Sequence[ChunkContext],
        correction: str = "",
        *,
        cache_prefix: bool = True,
    ) -> ToolRequest:
        """One request for several chunks of one agent, each in its own section with its date."""
        from memoryd.extractors.sections import section_ids  # noqa: PLC0415 - see the top

        ids = section_ids(len(chunks))
        transcripts = [chunk.render() for chunk in chunks]
        everything = "".join(transcripts) + "".join(c.known_entities + c.tacit for c in contexts)
        nonce = make_nonce(everything + contexts[0].skills_index, self._token)
        sections = "\n\n".join(
            self._section.render(
                section=section,
                date=chunk.day.isoformat(),
                session=chunk.session_id,
                known_entities=context.known_entities or "(none)",
                tacit=context.tacit or "(none)",
                nonce=nonce,
                transcript=transcript,
            )
            for section, chunk, context, transcript in zip(
                ids, chunks, contexts, transcripts, strict=True
            )
        )
        lead = chunks[0]
        user_content = self._sections.render(
            agent=lead.agent,
            routine=lead.routine or "(none)",
            skills_index=contexts[0].skills_index or "(empty)",
            count=str(len(chunks)),
            sections=sections,
        )
        return self._request(user_content, correction, cache_prefix=cache_prefix)

    def _request(
        self, user_content: str, correction: str, *, cache_prefix: bool = True
    ) -> ToolRequest:
        """The request for `user_content`, with the corrective note after it when retrying."""
        if correction:
            user_content += "\n\n" + correction
        return ToolRequest(
            model=self._model,
            system=self._system.text,
            tool=self._tool,
            user_content=user_content,
            max_tokens=self._max_tokens,
            cache_prefix=cache_prefix,
        )

    def extract(
        self, chunk: Chunk, context: ChunkContext, may_retry: RetryCheck = retry_allowed
    ) -> Extraction:
        return self._ask(
            lambda correction: self.build_request(chunk, context, correction),
            lambda _answer: [],
            may_retry,
        )

    def extract_sections(
        self,
        chunks: Sequence[Chunk],
        contexts: Sequence[ChunkContext],
        may_retry: RetryCheck = retry_allowed,
        *,
        cache_prefix: bool = True,
    ) -> tuple[Extraction, list[RecordMemories]]:
        """Several chunks of one agent (of any days) in one call: the whole (scrubbed) extraction
        and one answer per chunk, in order (`memoryd.extractors.sections`). An answer whose
        attribution is wrong counts as invalid (one corrective retry, as for any answer)."""
        from memoryd.extractors.sections import (  # noqa: PLC0415 - see the top
            attribution_errors,
            section_ids,
            split_answer,
        )

        ids = section_ids(len(chunks))
        extraction = self._ask(
            lambda correction: self.build_sections_request(
                chunks, contexts, correction, cache_prefix=cache_prefix
            ),
            lambda answer: attribution_errors(answer, ids),
            may_retry,
        )
        texts = ["\n".join(turn.text for turn in chunk.turns) for chunk in chunks]
        shown = [context.known_entities for context in contexts]
        return extraction, split_answer(extraction.answer, ids, texts, shown)

    def _ask(
        self,
        build: Callable[[str], ToolRequest],
        check: Callable[[RecordMemories], list[str]],
        may_retry: RetryCheck,
    ) -> Extraction:
        usage = Usage()
        correction = ""
        reason = ""
        raw = ""
        endpoint: str | None = None
        for attempt in (1, 2):
            if attempt == 2 and not may_retry(usage):
                raise RetryRefusedError(usage)
            result = self._client.call_tool(build(correction))
            usage = usage + result.usage
            endpoint = result.endpoint
            answer, reason, raw = _validate(result)
            if answer is not None:
                problems = check(answer)
                if not problems:
                    return Extraction(
                        answer=scrub_answer(answer, self._scrub),
                        usage=usage,
                        model=result.model,
                    )
                answer, reason = None, "; ".join(problems[:20])
            if result.stop_reason == REFUSAL:
                # Asking again to "follow the schema" does not change a refusal of the content.
                raise InvalidAnswerError(
                    "the model refused the content",
                    self._scrub(raw),
                    usage,
                    about_content=True,
                    model=self._model,
                    endpoint=endpoint,
                )
            correction = (
                "Your previous answer could not be used: "
                + reason
                + "\nCall record_memories again with an input that follows its schema exactly."
            )
        # An invalid answer is kept (journal, failures, logs) for the operator: scrubbed first,
        # since the model can echo a secret it was shown or invent one.
        raise InvalidAnswerError(
            self._scrub(reason), self._scrub(raw), usage, model=self._model, endpoint=endpoint
        )


def _validate(result: ToolResult) -> tuple[RecordMemories | None, str, str]:
    from memoryd.extractors.contract import (  # noqa: PLC0415 - see the top
        RECORD_MEMORIES_TOOL,
        RecordMemories,
    )

    if result.tool_input is None:
        return None, f"no {RECORD_MEMORIES_TOOL} call in the answer", ""
    raw = repr(result.tool_input)
    try:
        return RecordMemories.model_validate(result.tool_input), "", raw
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(top)'}: {item['msg']}"
            for item in error.errors()[:20]
        )
        return None, problems, raw


def _load_prompt(name: str) -> Prompt:
    from memoryd.prompts import load_prompt  # noqa: PLC0415 - see the top

    return load_prompt(name)
