"""Extraction: one chunk in, one validated `record_memories` answer out.

Two extractors share one shape (`Extractor`): `LLMExtractor` asks a model
(`memoryd.extractors.llm_extractor`), `MarkersExtractor` (here) needs no model. This module holds
what both and their callers share: the errors (`InvalidAnswerError`: the answer broke the
contract twice or was refused; `RetryRefusedError`: the corrective retry would pass the budget),
the context a chunk is shown, the watched wrapper the daemon and the command line put around an
extractor, and the scrubbing of answers.

Validated answers are scrubbed of secrets before anyone files them: a model can echo what it saw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import ValidationError

from memoryd.errors import MemorydError
from memoryd.extractors.chunking import Chunk
from memoryd.llm.prices import Usage

if TYPE_CHECKING:
    from memoryd.extractors.contract import RecordMemories

# The tool contract (pydantic models) and the markers parser are imported where a chunk is
# extracted, not with this module: a heartbeat with nothing new builds its extractor but never
# asks it, and must not pay for them. Hence the imports marked PLC0415.

# How much of an invalid answer is kept in an error (for logs and the quarantine listing).
RAW_ANSWER_LIMIT = 2000
# The Messages API's stop reason when the model declines to answer on this content.
REFUSAL = "refusal"


class InvalidAnswerError(MemorydError):
    """The model's answer broke the contract twice (or refused the content once); the chunk
    fails and nothing is written. `model` and `endpoint` say who answered, when known;
    `about_content` is True when the fault is this content's alone (a refusal, or the markers
    provider, which has no model to doubt)."""

    def __init__(
        self,
        reason: str,
        raw_answer: str,
        usage: Usage,
        *,
        about_content: bool = False,
        model: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.reason = reason
        self.raw_answer = raw_answer[:RAW_ANSWER_LIMIT]
        self.usage = usage
        self.about_content = about_content
        self.model = model
        self.endpoint = endpoint
        super().__init__(f"invalid record_memories answer: {reason}")


@dataclass(frozen=True)
class ChunkContext:
    """What the model is shown besides the transcript (already rendered, bounded text)."""

    known_entities: str
    skills_index: str
    tacit: str = ""  # the filed tacit lines relevant to the excerpt, one bullet each


@dataclass(frozen=True)
class Extraction:
    answer: RecordMemories
    usage: Usage = field(default_factory=Usage)
    model: str | None = None


class RetryRefusedError(MemorydError):
    """The corrective retry after an invalid answer would pass the budget: it is not sent. The
    chunk does not fail for it; the heartbeat stops for the budget. `usage` is what the first,
    invalid answer cost (it is charged)."""

    def __init__(self, usage: Usage) -> None:
        self.usage = usage
        super().__init__("the corrective retry was not sent: it would pass the budget")


# Given what the call so far has used, whether one more paid call (the corrective retry) may be
# sent: every paid call passes the budget check.
RetryCheck = Callable[[Usage], bool]


def retry_allowed(_used: Usage) -> bool:
    """The default retry check: a corrective retry may always be sent."""
    return True


class Extractor(Protocol):
    """Turns one chunk (and its context) into a validated answer."""

    @property
    def prompt_refs(self) -> tuple[str, ...]:
        """`name@version` of the prompts this extractor uses (for logs and commit trailers)."""
        ...

    def extract(
        self, chunk: Chunk, context: ChunkContext, may_retry: RetryCheck = retry_allowed
    ) -> Extraction:
        """Return the validated, scrubbed answer. Raise InvalidAnswerError, RetryRefusedError
        (`may_retry` refused a corrective retry) or an LLMError."""
        ...


@runtime_checkable
class SectionsExtractor(Protocol):
    """An extractor that can answer several chunks in one call, each in its own section
    (`memoryd.extractors.llm_extractor.LLMExtractor`)."""

    def extract_sections(
        self,
        chunks: Sequence[Chunk],
        contexts: Sequence[ChunkContext],
        may_retry: RetryCheck = retry_allowed,
        *,
        cache_prefix: bool = True,
    ) -> tuple[Extraction, list[RecordMemories]]:
        """Return the call's extraction and one answer per chunk, in order; `cache_prefix`
        False when no other call will reuse the prefix (a cache write costs more than input)."""
        ...


class WatchedExtractor:
    """An extractor whose every call runs inside `watch()`: the daemon marks the time spent
    waiting on the model, the command line redraws its progress after each call."""

    def __init__(
        self, inner: Extractor, watch: Callable[[], AbstractContextManager[object]]
    ) -> None:
        self._inner = inner
        self._watch = watch

    @property
    def prompt_refs(self) -> tuple[str, ...]:
        return self._inner.prompt_refs

    def extract(
        self, chunk: Chunk, context: ChunkContext, may_retry: RetryCheck = retry_allowed
    ) -> Extraction:
        with self._watch():
            return self._inner.extract(chunk, context, may_retry)

    @property
    def shares_calls(self) -> bool:
        return shares_calls(self._inner)

    def extract_sections(
        self,
        chunks: Sequence[Chunk],
        contexts: Sequence[ChunkContext],
        may_retry: RetryCheck = retry_allowed,
        *,
        cache_prefix: bool = True,
    ) -> tuple[Extraction, list[RecordMemories]]:
        inner = self._inner
        if not isinstance(inner, SectionsExtractor) or not shares_calls(inner):
            raise TypeError("this extractor asks no model: chunks cannot share a call")
        with self._watch():
            return inner.extract_sections(chunks, contexts, may_retry, cache_prefix=cache_prefix)


def shares_calls(extractor: object) -> bool:
    """Whether the extractor can answer several chunks in one call (`extract_sections`)."""
    if isinstance(extractor, WatchedExtractor):
        return extractor.shares_calls
    return isinstance(extractor, SectionsExtractor)


Scrubber = Callable[[str], str]


def scrub_answer(answer: RecordMemories, scrub: Scrubber) -> RecordMemories:
    """Return the answer with every string passed through `scrub` (secret redaction)."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrub(value)
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        return value

    from memoryd.extractors.contract import RecordMemories  # noqa: PLC0415 - see the top

    return RecordMemories.model_validate(walk(answer.model_dump()))


class MarkersExtractor:
    """Extraction from explicit marker lines, with no model (see `memoryd.extractors.markers`)."""

    def __init__(self, scrub: Scrubber) -> None:
        self._scrub = scrub

    @property
    def prompt_refs(self) -> tuple[str, ...]:
        return ("markers@1",)

    def extract(
        self, chunk: Chunk, context: ChunkContext, may_retry: RetryCheck = retry_allowed
    ) -> Extraction:
        del context, may_retry  # markers say everything themselves, and cost nothing
        from memoryd.extractors.contract import RecordMemories  # noqa: PLC0415 - see the top
        from memoryd.extractors.markers import extract_markers  # noqa: PLC0415

        found = extract_markers(chunk.turns, chunk.zone, chunk.routine)
        try:
            answer = RecordMemories.model_validate(found.tool_input)
        except ValidationError as error:
            raise InvalidAnswerError(
                self._scrub(str(error)),
                self._scrub(repr(found.tool_input)),
                Usage(),
                about_content=True,
                model="markers",
            ) from None
        return Extraction(answer=scrub_answer(answer, self._scrub), model="markers")
