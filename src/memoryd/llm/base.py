"""The one small interface the pipeline calls an LLM through, and the errors it may raise.

Every extraction asks for exactly one thing: "send this stable prefix (system text and one tool
definition) plus this variable user content, have the model call the tool (forced where the
model accepts it, `memoryd.llm.tool_choice`), and give me the tool's input".
`LLMClient.call_tool` is that whole surface; the Anthropic adapter, the offline markers provider
and the tests' fakes all implement it. `BatchClient` is the same call sent as a Message Batch,
for the weekly rewrite.

Invariants:
- `ToolResult.tool_input` is `None` exactly when the answer holds no `tool_use` block for the
  requested tool; the caller decides whether that is an invalid answer.
- Errors are typed by what the caller can do: `TransientLLMError` (also a
  `memoryd.errors.TransientError`, exit 75) means "stop now, try again on a later run";
  `PermanentLLMError` (exit 1) means "this call will not succeed as it stands";
  `SpendLimitError` is transient for the day and is never retried within a run.
  `UnusableLLMError` (a `PermanentLLMError`, exit 78) is about the account, key, model or
  endpoint rather than the request: every call would fail the same way until the operator fixes
  it, so the run stops at once and no chunk is charged with a failure.
- Error messages name the endpoint and carry the status, the API's error type and message and
  the request id, never the request content or the API key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from memoryd.errors import EXIT_CONFIG, MemorydError, TransientError
from memoryd.llm.prices import Usage

# The Messages API's rules for tool names and for the custom ids of batch requests.
# Matched whole (`fullmatch`): with `^...$` and `match`, "$" also matches before a final "\n".
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

BatchStatus = Literal["in_progress", "canceling", "ended"]

# Roughly four characters of English prose or code per token; text outside ASCII (accents,
# CJK, emoji) tokenizes far more densely, so each such character is counted as a whole token.
_ASCII_CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class ToolSpec:
    """One tool definition as the model sees it. `input_schema` is a JSON Schema object."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def __post_init__(self) -> None:
        # A bad name is a programming error, caught here rather than as an API 400 at 3 a.m.
        if not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_TOOL_NAME.pattern}")
        if self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: input_schema must have type 'object'")


@dataclass(frozen=True)
class ToolRequest:
    """One tool call: the stable prefix (`system`, `tool`) and the variable `user_content`.

    `cache_prefix` marks the prefix for prompt caching; it is worth it whenever the same prefix
    is sent again within a few minutes, which is the normal case for a heartbeat's chunks.
    """

    model: str
    system: str
    tool: ToolSpec
    user_content: str
    max_tokens: int
    cache_prefix: bool = True

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if not self.model:
            raise ValueError("model must not be empty")


@dataclass(frozen=True)
class ToolResult:
    """The model's answer to a `ToolRequest`.

    `tool_input` is `None` when the answer has no `tool_use` block for the requested tool.
    `request_id` is the API's id for the call (for logs and support), when the server gave one;
    `endpoint` is the base URL that answered, when the client knows it.
    """

    tool_input: dict[str, Any] | None
    stop_reason: str | None
    usage: Usage
    model: str
    request_id: str | None
    endpoint: str | None = None


class LLMClient(Protocol):
    """What the pipeline needs from an LLM: one tool call."""

    def call_tool(self, request: ToolRequest) -> ToolResult:
        """Send `request`, return the model's tool input.

        Raise TransientLLMError when the call may succeed later (the service was unreachable,
        overloaded or rate limited after all retries), SpendLimitError when a spend limit was
        hit, and PermanentLLMError when it will not succeed as it stands.
        """
        ...


@dataclass(frozen=True)
class BatchItemFailure:
    """A batch request that produced no message: `kind` is errored, canceled or expired."""

    kind: str
    message: str


class BatchClient(Protocol):
    """Message Batches (half price, answers within 24 h), for the weekly rewrite."""

    def submit_batch(self, requests: Sequence[tuple[str, ToolRequest]]) -> str:
        """Submit `(custom_id, request)` pairs as one batch; return the batch id.

        Raise InvalidBatchError, before anything is sent, if `validate_custom_ids` refuses
        the ids.
        """
        ...

    def batch_status(self, batch_id: str) -> BatchStatus:
        """Return in_progress, canceling or ended."""
        ...

    def batch_results(self, batch_id: str) -> dict[str, ToolResult | BatchItemFailure]:
        """Return each request's outcome by custom_id. Raise BatchNotEndedError if the batch
        is still processing."""
        ...


class LLMError(MemorydError):
    """A call to the LLM failed. Carries what the API said, never what was sent.

    `endpoint` is the base URL the call went to (the adapter also names it in the message).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error_type: str | None = None,
        error_code: str | None = None,
        request_id: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.error_type = error_type
        self.error_code = error_code
        self.request_id = request_id
        self.endpoint = endpoint
        super().__init__(message)


class TransientLLMError(LLMError, TransientError):
    """The LLM could not be reached or was overloaded after all retries; try on a later run."""

    # Both parents define exit_code; spell out which one wins.
    exit_code = TransientError.exit_code


class PermanentLLMError(LLMError):
    """The request was refused (bad key, bad request, unknown model): retrying will not help."""


UnusableKind = Literal[
    "authentication",
    "permission",
    "model_not_found",
    "billing",
    "request_too_large",
    "invalid_answers",
    "tool_choice",
]
# Kinds about the key or the account (any answer disproves them), and kinds about one model
# (only an answer from that model does; a configuration naming another model has moved on).
ACCOUNT_KINDS: frozenset[UnusableKind] = frozenset({"authentication", "permission", "billing"})
MODEL_KINDS: frozenset[UnusableKind] = frozenset(
    {"model_not_found", "request_too_large", "invalid_answers", "tool_choice"}
)

# What the operator must do about each kind; `{model}` is the model the calls asked for.
_REMEDIES: dict[UnusableKind, str] = {
    "authentication": "the endpoint refused the API key: put a valid key in llm.api_key_file, "
    "the systemd credential anthropic-api-key or ANTHROPIC_API_KEY",
    "permission": "the API key may not use this model or endpoint: check the key's workspace "
    "and permissions, llm.model and llm.base_url",
    "model_not_found": "the endpoint does not know the model {model} (retired or misspelt), or "
    "llm.base_url does not point at a Messages API: set llm.model (and llm.rewrite_model) to a "
    "current model, or fix llm.base_url",
    "billing": "the account has no credit left: buy credits or change the plan (Plans & "
    "Billing), or use another account's key",
    "request_too_large": "the endpoint refuses requests of this size (chunks are bounded by "
    "llm.chunk_tokens, so this is the endpoint's limit): lower llm.chunk_tokens",
    "invalid_answers": "the model {model} keeps answering outside the record_memories tool "
    "contract, so it cannot do the task: choose a model that answers through tool use "
    "(llm.model)",
    "tool_choice": "the model {model} refuses the tool choice memoryd asks for, even an "
    "automatic one, so it cannot answer through a tool: choose another model (llm.model, "
    "llm.rewrite_model)",
}


def remedy_for(kind: UnusableKind, model: str | None) -> str:
    """What the operator must fix for a problem of this kind (one sentence, no secrets)."""
    return _REMEDIES[kind].format(model=model or "(unknown)")


class UnusableLLMError(PermanentLLMError):
    """The account, key, model or endpoint cannot be used, whatever is sent.

    Not about the request: every call would fail the same way until the operator fixes the
    configuration, the key, the model, the billing or the endpoint, so a run stops at its first
    such error, holds its cursors and charges no chunk with a failure. Exit 78, the code of a
    configuration error (docs/cli.md): a retry never helps, only the operator can. `kind` says
    which problem it is, `remedy` what to fix, `api_message` what the server itself said.
    """

    exit_code = EXIT_CONFIG

    def __init__(
        self,
        kind: UnusableKind,
        description: str,
        *,
        model: str | None,
        api_message: str,
        endpoint: str | None = None,
        status_code: int | None = None,
        error_type: str | None = None,
        error_code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.kind: UnusableKind = kind
        self.model = model
        self.api_message = api_message
        self.remedy = remedy_for(kind, model)
        super().__init__(
            f"{description}; {self.remedy}",
            status_code=status_code,
            error_type=error_type,
            error_code=error_code,
            request_id=request_id,
            endpoint=endpoint,
        )

    @classmethod
    def invalid_answers(
        cls, *, model: str, endpoint: str | None, count: int, reason: str
    ) -> UnusableLLMError:
        """The model answered `count` chunks in a row outside the tool contract."""
        where = f" at {endpoint}" if endpoint else ""
        return cls(
            "invalid_answers",
            f"{count} chunks in a row got an invalid answer from {model}{where}: {reason}",
            model=model,
            api_message=reason,
            endpoint=endpoint,
        )

    def problem(self) -> dict[str, Any]:
        """The problem as JSON-ready data, for the `llm.unusable` log line and `status`."""
        return {
            "kind": self.kind,
            "remedy": self.remedy,
            "endpoint": self.endpoint,
            "model": self.model,
            "status": self.status_code,
            "error_type": self.error_type,
            "message": self.api_message,
            "request_id": self.request_id,
        }


class ToolChoiceRefusedError(UnusableLLMError):
    """A 400 saying the model does not support the tool choice sent (a forced one, for the
    models that accept only `auto`). About the model, never the request: the adapter resends
    the same request at once with an automatic choice (`memoryd.llm.tool_choice`); only when
    that is refused too does it reach the caller, which then stops the run like any other
    unusable model, charging no chunk."""

    def __init__(self, description: str, *, model: str | None, api_message: str, **details: Any):
        super().__init__(
            "tool_choice", description, model=model, api_message=api_message, **details
        )


class SpendLimitError(TransientLLMError):
    """The organization or workspace hit an API spend limit. Not retried; the run stops early."""


class InvalidBatchError(PermanentLLMError):
    """A batch was refused before sending: empty, or a custom_id that is malformed or repeated."""


class BatchNotEndedError(LLMError):
    """Results were asked for a batch that is still processing; poll `batch_status` first."""


def validate_custom_ids(custom_ids: Sequence[str]) -> None:
    """Raise InvalidBatchError unless there is at least one id and every id is unique and
    1-64 characters of [A-Za-z0-9_-] (the API's rule; memoryd checks it before sending)."""
    if not custom_ids:
        raise InvalidBatchError("a batch needs at least one request")
    seen: set[str] = set()
    for custom_id in custom_ids:
        if not _CUSTOM_ID.fullmatch(custom_id):
            raise InvalidBatchError(
                f"custom_id {custom_id!r} must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'"
            )
        if custom_id in seen:
            raise InvalidBatchError(f"custom_id {custom_id!r} appears twice in the batch")
        seen.add(custom_id)


def estimate_tokens(text: str) -> int:
    """Return a cheap, offline, deliberately generous estimate of the tokens in `text`.

    Used for dry runs and for cutting chunks, where overestimating is safe and a tokenizer
    round trip is not worth it. An empty text is 0 tokens; any other text at least 1.
    """
    if not text:
        return 0
    # Encoding with errors ignored drops exactly the non-ASCII characters, at C speed.
    ascii_count = len(text.encode("ascii", "ignore"))
    non_ascii = len(text) - ascii_count
    return math.ceil(ascii_count / _ASCII_CHARS_PER_TOKEN) + non_ascii
