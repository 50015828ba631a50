"""The Anthropic adapter: `LLMClient` over the official SDK, plus Message Batches.

This is the only module that imports `anthropic`. Its invariants:

- Credentials and endpoint are exactly what the caller passes. The SDK reads
  `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, profile files and workload-identity variables
  only when no explicit credential or base URL is given, so both are always passed explicitly
  (the public endpoint when `base_url` is None). OpenTelemetry options are passed explicitly
  too, so no environment variable can switch on request-content capture in traces.
- Retries have one owner: the SDK's own are off (`max_retries=0`) and tenacity retries here.
  Retried: 408, 409, 429, 5xx (529 included), connection errors and timeouts, with jittered
  exponential backoff, or the server's `retry-after-ms` / `retry-after` when given, never
  waiting more than `max_wait_seconds` at a time. `x-should-retry: true|false` overrides the
  status. A `retry-after` also holds every other call of the client in flight, and an answer
  saying a rate limit is used up (`anthropic-ratelimit-*-remaining: 0`) holds the next
  requests until its reset (`memoryd.llm.ratelimit`). Never retried: spend-limit answers and
  every other 4xx (400, 401, 403, 404, 413, 422, ...).
- Failures are typed by what the caller can do (`memoryd.llm.base`), by the table in
  `memoryd.llm._statuses`.
- Every error names the endpoint (the base URL) in its message, connection errors included.
- Each retry logs `llm.retry`; a call that fails for good logs `llm.failed`. Both carry the
  operation, attempt, status, error class, request id and wait; never content or the key.
  A successful call logs `llm.called` at debug level with its usage.
- Every call offers one tool, forced where the model accepts it and otherwise automatic and
  strict (`memoryd.llm.tool_choice`; a forced choice refused with a 400 is resent at once as
  `auto`); the stable prefix (system block and tool definition) is marked
  `cache_control: ephemeral` when the request asks for it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

import anthropic
import httpx2
import structlog
from anthropic.types import Message, ToolUseBlock
from anthropic.types.messages import MessageBatchIndividualResponse
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from memoryd.llm._statuses import (
    FailedAnswer,
    clip,
    is_spend_limit,
    is_transient_status,
    should_retry_header,
    translate_answer,
)
from memoryd.llm.base import (
    BatchItemFailure,
    BatchNotEndedError,
    BatchStatus,
    LLMError,
    PermanentLLMError,
    ToolRequest,
    ToolResult,
    TransientLLMError,
    UnusableLLMError,
    validate_custom_ids,
)
from memoryd.llm.params import message_params
from memoryd.llm.prices import Usage
from memoryd.llm.ratelimit import RateGate, retry_after_seconds
from memoryd.llm.tls import tls_context
from memoryd.llm.tool_choice import PROCESS_TOOL_CHOICES, ToolChoices

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_WAIT_SECONDS = 60.0
# Connecting is quick or hopeless; only reading a long answer deserves the full timeout.
_CONNECT_TIMEOUT_SECONDS = 10.0


_T = TypeVar("_T")


def _logger() -> Any:
    # Fetched per event rather than once at import, so a test's structlog.testing.capture_logs
    # sees the events even if logging was configured to cache loggers on first use.
    return structlog.get_logger(__name__)


class AnthropicClient:
    """`LLMClient` and `BatchClient` over the Anthropic Messages API (or a compatible one).

    `sleep` and `rng` are injectable so that tests observe the waits instead of sleeping them.
    Close the client (or use it as a context manager) to release its connection pool.
    """

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_seconds: float = 120.0,
        max_attempts: int = 4,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
        initial_wait_seconds: float = 1.0,
        tool_choices: ToolChoices = PROCESS_TOOL_CHOICES,
    ) -> None:
        if not api_key:
            endpoint = (base_url or DEFAULT_BASE_URL).rstrip("/")
            raise PermanentLLMError(f"no API key was given for {endpoint}", endpoint=endpoint)
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds}")
        self._max_attempts = max_attempts
        self._tool_choices = tool_choices
        self._sleep = sleep
        # Jitter needs no reproducibility in production; tests pass a seeded generator.
        self._rng = rng if rng is not None else random.Random()  # noqa: S311 - jitter, not crypto
        self._max_wait_seconds = max_wait_seconds
        self._initial_wait_seconds = initial_wait_seconds
        # Shared by every call of this client, from whichever thread (`memoryd.llm.ratelimit`).
        self._gate = RateGate(sleep, max_wait_seconds=max_wait_seconds)
        self._sdk = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url or DEFAULT_BASE_URL,
            max_retries=0,
            timeout=anthropic.Timeout(
                timeout_seconds, connect=min(timeout_seconds, _CONNECT_TIMEOUT_SECONDS)
            ),
            open_telemetry={},
            http_client=anthropic.DefaultHttpxClient(verify=tls_context()),
        )

    @property
    def base_url(self) -> str:
        """The endpoint this client sends to (for logs and `status`)."""
        return str(self._sdk.base_url)

    @property
    def endpoint(self) -> str:
        """The base URL as errors and logs name it (no trailing slash)."""
        return self.base_url.rstrip("/")

    def close(self) -> None:
        self._sdk.close()

    def __enter__(self) -> AnthropicClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def call_tool(self, request: ToolRequest) -> ToolResult:
        """Send one tool request, with the tool choice its model accepts; see
        `LLMClient.call_tool` and `memoryd.llm.tool_choice`."""
        return self._tool_choices.call(request, self._send_tool_request)

    def _send_tool_request(self, request: ToolRequest, forced: bool) -> ToolResult:
        params = message_params(request, forced=forced)
        request_id: str | None = None

        def create() -> Message:
            nonlocal request_id
            raw = self._sdk.messages.with_raw_response.create(**params)
            self._gate.observe(raw.headers, failed=False)  # a rate limit used up: slow down
            request_id = raw.request_id
            return cast(Message, raw.parse())

        message = self._call("messages.create", create, model=request.model)
        result = _tool_result(message, request.tool.name, request_id, self.endpoint)
        _logger().debug(
            "llm.called",
            model=result.model,
            request_id=result.request_id,
            stop_reason=result.stop_reason,
            tool_called=result.tool_input is not None,
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
            cache_creation_input_tokens=result.usage.cache_creation_input_tokens,
            cache_read_input_tokens=result.usage.cache_read_input_tokens,
        )
        return result

    def count_tokens(self, request: ToolRequest) -> int:
        """The input tokens `request` would be billed, as the endpoint counts them
        (`POST /v1/messages/count_tokens`, with the tool choice `call_tool` would send). Raise
        as `call_tool` does; an endpoint without the route answers 404 (PermanentLLMError)."""
        params = message_params(request, forced=self._tool_choices.forces(request.model))
        del params["max_tokens"]  # not a parameter of a count
        counted = self._call(
            "messages.count_tokens",
            lambda: self._sdk.messages.count_tokens(**params),
            model=request.model,
        )
        return counted.input_tokens

    def submit_batch(self, requests: Sequence[tuple[str, ToolRequest]]) -> str:
        """Submit `(custom_id, request)` pairs as one Message Batch; return the batch id.

        Raise InvalidBatchError, before anything is sent, if the batch is empty or a
        custom_id is not 1-64 characters of [A-Za-z0-9_-] or appears twice.
        """
        validate_custom_ids([custom_id for custom_id, _ in requests])
        payload = [
            {
                "custom_id": custom_id,
                "params": message_params(request, forced=self._tool_choices.forces(request.model)),
            }
            for custom_id, request in requests
        ]
        # The SDK types each entry as a TypedDict; message_params builds exactly that shape.
        batch = self._call(
            "batches.create",
            lambda: self._sdk.messages.batches.create(requests=cast("Any", payload)),
            model=requests[0][1].model,
        )
        return batch.id

    def batch_status(self, batch_id: str) -> BatchStatus:
        """Return the processing status of a batch: in_progress, canceling or ended."""
        batch = self._call(
            "batches.retrieve", lambda: self._sdk.messages.batches.retrieve(batch_id)
        )
        return batch.processing_status

    def batch_results(self, batch_id: str) -> dict[str, ToolResult | BatchItemFailure]:
        """Return each request's outcome by custom_id, in custom_id order.

        A succeeded request gives a ToolResult (its `tool_input` taken from the first
        `tool_use` block, since every request offered one tool); any other gives a
        BatchItemFailure. Raise BatchNotEndedError if the batch is still processing.
        """
        status = self.batch_status(batch_id)
        if status != "ended":
            raise BatchNotEndedError(
                f"batch {batch_id} at {self.endpoint} is {status}; its results are not ready",
                endpoint=self.endpoint,
            )
        return self._call("batches.results", lambda: self._read_results(batch_id))

    def _read_results(self, batch_id: str) -> dict[str, ToolResult | BatchItemFailure]:
        decoder = self._sdk.messages.batches.results(batch_id)
        try:
            outcomes = {item.custom_id: _batch_outcome(item) for item in decoder}
        except httpx2.TransportError as error:
            # The SDK translates transport failures only while it waits for the response
            # head; one in the middle of the streamed JSONL arrives raw. Give it the SDK's
            # shape so that the retry policy and error translation treat it the same.
            if isinstance(error, httpx2.TimeoutException):
                raise anthropic.APITimeoutError(request=error.request) from error
            raise anthropic.APIConnectionError(request=error.request) from error
        finally:
            decoder.close()
        return dict(sorted(outcomes.items()))

    def _call(self, operation: str, action: Callable[[], _T], *, model: str | None = None) -> _T:
        """Run `action` under the retry policy; turn SDK errors into memoryd's LLM errors.

        `model` is the model the request names (for the errors about it)."""
        attempts = 0

        def attempt() -> _T:
            nonlocal attempts
            attempts += 1
            self._gate.wait()
            try:
                return action()
            except anthropic.APIStatusError as error:
                self._gate.observe(error.response.headers, failed=True)
                raise

        retrying = Retrying(
            retry=retry_if_exception(_is_retryable),
            stop=stop_after_attempt(self._max_attempts),
            wait=self._wait_seconds,
            sleep=self._sleep,
            before_sleep=lambda state: _log_retry(operation, state),
            reraise=True,
        )
        try:
            return retrying(attempt)
        except anthropic.APIError as error:
            translated = _translate(operation, error, self.endpoint, model)
            _logger().warning(
                "llm.failed",
                operation=operation,
                attempts=attempts,
                status=translated.status_code,
                error=type(error).__name__,
                error_code=translated.error_code,
                request_id=translated.request_id,
                endpoint=self.endpoint,
                transient=isinstance(translated, TransientLLMError),
                unusable=translated.kind if isinstance(translated, UnusableLLMError) else None,
            )
            raise translated from error

    def _wait_seconds(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        # The server's own wait when it names one in seconds (`memoryd.llm.ratelimit`).
        status_error = error if isinstance(error, anthropic.APIStatusError) else None
        hinted = retry_after_seconds(status_error.response.headers) if status_error else None
        if hinted is not None:
            return min(hinted, self._max_wait_seconds)
        ceiling = min(
            self._max_wait_seconds, self._initial_wait_seconds * 2.0 ** (state.attempt_number - 1)
        )
        # Half jitter: spread clients out without ever retrying immediately.
        return ceiling * self._rng.uniform(0.5, 1.0)


def _tool_result(
    message: Message, tool_name: str | None, request_id: str | None, endpoint: str | None = None
) -> ToolResult:
    tool_input: dict[str, Any] | None = None
    for block in message.content:
        if isinstance(block, ToolUseBlock) and tool_name in {None, block.name}:
            # A server that sent a non-object input gave no usable tool call either.
            tool_input = dict(block.input) if isinstance(block.input, Mapping) else None
            break
    usage = message.usage
    return ToolResult(
        tool_input=tool_input,
        stop_reason=message.stop_reason,
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        ),
        model=message.model,
        request_id=request_id,
        endpoint=endpoint,
    )


def _batch_outcome(item: MessageBatchIndividualResponse) -> ToolResult | BatchItemFailure:
    result = item.result
    if result.type == "succeeded":
        return _tool_result(result.message, None, None)
    if result.type == "errored":
        error = result.error.error
        return BatchItemFailure("errored", f"{error.type}: {clip(error.message)}")
    return BatchItemFailure(result.type, f"the request was {result.type} before it ran")


def _is_retryable(error: BaseException) -> bool:
    if isinstance(error, anthropic.APIStatusError):
        if is_spend_limit(error.error_code, error.status_code):
            return False
        hint = should_retry_header(error.response.headers)
        return hint if hint is not None else is_transient_status(error.status_code)
    # APITimeoutError is a kind of APIConnectionError.
    return isinstance(error, anthropic.APIConnectionError)


def _log_retry(operation: str, state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    status_error = error if isinstance(error, anthropic.APIStatusError) else None
    _logger().warning(
        "llm.retry",
        operation=operation,
        attempt=state.attempt_number,
        status=status_error.status_code if status_error else None,
        error=type(error).__name__,
        request_id=status_error.request_id if status_error else None,
        wait_seconds=round(state.next_action.sleep, 3) if state.next_action else None,
    )


def _translate(
    operation: str, error: anthropic.APIError, endpoint: str, model: str | None
) -> LLMError:
    if isinstance(error, anthropic.APIStatusError):
        answer = FailedAnswer(
            status=error.status_code,
            error_type=error.type,
            error_code=error.error_code,
            api_message=error.api_message,
            request_id=error.request_id,
            headers=error.response.headers,
        )
        return translate_answer(operation, answer, endpoint, model)
    if isinstance(error, anthropic.APIConnectionError):
        return TransientLLMError(
            f"{operation} to {endpoint} failed: {error.message}", endpoint=endpoint
        )
    # An answer that does not parse as the API's schema: a broken or incompatible server.
    return PermanentLLMError(
        f"{operation} to {endpoint} failed: {clip(str(error))}", endpoint=endpoint
    )
