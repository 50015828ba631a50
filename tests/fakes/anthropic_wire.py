"""The fake Anthropic API's vocabulary: scripted answers, recorded requests, and the JSON the
real API answers with (messages, errors, batches).

Pure data and pure functions; the server that speaks it is `tests.fakes.fake_anthropic`. Bodies
use fixed timestamps, so the same script gives the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

_CREATED_AT = "2026-01-01T00:00:00Z"
_EXPIRES_AT = "2026-01-02T00:00:00Z"


@dataclass(frozen=True)
class FakeUsage:
    input_tokens: int = 100
    output_tokens: int = 20
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` answer; ``tool_name`` defaults to the tool the request forced."""

    input: Mapping[str, Any]
    tool_name: str | None = None
    usage: FakeUsage | None = None
    delay_seconds: float = 0.0


@dataclass(frozen=True)
class Text:
    """A text-only answer: the model did not call the tool. ``stop_reason="refusal"`` is the
    real API's answer when the model declines the content."""

    text: str = "I have nothing to record."
    usage: FakeUsage | None = None
    delay_seconds: float = 0.0
    stop_reason: str = "end_turn"


@dataclass(frozen=True)
class Error:
    """An HTTP error shaped like the real API's error body."""

    status: int
    type: str
    message: str = "fake error"
    headers: Mapping[str, str] = field(default_factory=dict)
    error_code: str | None = None
    delay_seconds: float = 0.0


Answer = ToolUse | Text | Error

# The real API's own words for the errors memoryd handles (docs.claude.com/en/api/errors and
# answers seen in the wild), so that tests exercise the classification on what servers say.
INVALID_KEY_MESSAGE = "invalid x-api-key"
PERMISSION_MESSAGE = "Your API key does not have permission to use the specified resource."
CREDIT_TOO_LOW_MESSAGE = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)
REQUEST_TOO_LARGE_MESSAGE = "Request exceeds the maximum allowed number of bytes."
FORCED_TOOL_REFUSED_MESSAGE = 'tool_choice type "tool" and "any" are not supported for this model'
# The models the real API refuses a forced tool choice for (as of 2026-12), matched as prefixes
# so that dated snapshots of them are refused too.
MODELS_REFUSING_FORCED_TOOL = frozenset(
    {
        "claude-sonnet-5-5",
        "claude-opus-5-5",
        "claude-fable-5-1",
        "claude-fable-5-2",
        "claude-mythos-5-1",
        "claude-mythos-5-2",
    }
)


def invalid_key() -> Error:
    """401: the key is unknown or revoked."""
    return Error(401, "authentication_error", INVALID_KEY_MESSAGE)


def permission_denied() -> Error:
    """403: the key may not use this resource (model, workspace, region)."""
    return Error(403, "permission_error", PERMISSION_MESSAGE)


def model_not_found(model: str) -> Error:
    """404: the model is unknown, e.g. retired."""
    return Error(404, "not_found_error", f"model: {model}")


def credit_too_low() -> Error:
    """400: the prepaid credit is used up (an invalid_request_error, not a billing status)."""
    return Error(400, "invalid_request_error", CREDIT_TOO_LOW_MESSAGE)


def request_too_large() -> Error:
    """413: the body is over the endpoint's size limit (answered before the API proper)."""
    return Error(413, "request_too_large", REQUEST_TOO_LARGE_MESSAGE)


def prompt_too_long(tokens: int = 212_345, maximum: int = 200_000) -> Error:
    """400: this one request does not fit the model's context window."""
    return Error(
        400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {maximum} maximum"
    )


def forced_tool_refused() -> Error:
    """400: the model accepts only an automatic tool choice, not a forced one."""
    return Error(400, "invalid_request_error", FORCED_TOOL_REFUSED_MESSAGE)


def forces_a_tool(params: Mapping[str, Any]) -> bool:
    """Whether a request forces tool use (`tool_choice` of type ``tool`` or ``any``)."""
    choice = params.get("tool_choice")
    return isinstance(choice, Mapping) and choice.get("type") in {"tool", "any"}


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it. ``custom_id`` is set for a request inside a batch."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    custom_id: str | None = None

    @property
    def api_key(self) -> str | None:
        """The key the client sent: SDK 2.14 sends ``Authorization: Bearer``, older ones
        ``x-api-key``."""
        authorization = self.headers.get("authorization", "")
        if authorization.startswith("Bearer "):
            return authorization.removeprefix("Bearer ")
        return self.headers.get("x-api-key")


Handler = Callable[[RecordedRequest], Answer]


def answer_from_json(data: Mapping[str, Any]) -> Answer:
    """Build an answer from its JSON form in a script (see the module docstring)."""
    kind = data.get("kind")
    delay = float(data.get("delay_seconds", 0.0))
    usage = FakeUsage(**data["usage"]) if "usage" in data else None
    if kind == "tool_use":
        return ToolUse(data["input"], data.get("tool_name"), usage, delay)
    if kind == "text":
        return Text(data.get("text", Text.text), usage, delay, data.get("stop_reason", "end_turn"))
    if kind == "error":
        return Error(
            int(data["status"]),
            data["type"],
            data.get("message", "fake error"),
            dict(data.get("headers", {})),
            data.get("error_code"),
            delay,
        )
    raise ValueError(f"unknown answer kind {kind!r}")


def message_json(
    params: Mapping[str, Any],
    answer: ToolUse | Text,
    *,
    default_usage: FakeUsage,
    message_id: str,
    tool_use_id: str,
) -> dict[str, Any]:
    """The Messages API's answer to `params`: a tool call, or text with no tool call."""
    usage = answer.usage or default_usage
    content: list[dict[str, Any]]
    if isinstance(answer, ToolUse):
        forced = params.get("tool_choice", {}).get("name")
        # Under an automatic choice a model answering with a tool names one it was offered.
        offered = [tool.get("name") for tool in params.get("tools", []) if isinstance(tool, dict)]
        name = answer.tool_name or forced or (offered[0] if offered else None) or "tool"
        content = [
            {"type": "tool_use", "id": tool_use_id, "name": name, "input": dict(answer.input)}
        ]
        stop_reason = "tool_use"
    else:
        content = [{"type": "text", "text": answer.text}]
        stop_reason = answer.stop_reason
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": params.get("model", "fake-model"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": asdict(usage),
    }


def batch_json(
    batch_id: str, *, count: int, succeeded: int, results_url: str | None
) -> dict[str, Any]:
    """A MessageBatch object; the batch has ended exactly when it has a `results_url`."""
    ended = results_url is not None
    return {
        "id": batch_id,
        "type": "message_batch",
        "processing_status": "ended" if ended else "in_progress",
        "request_counts": {
            "processing": 0 if ended else count,
            "succeeded": succeeded if ended else 0,
            "errored": count - succeeded if ended else 0,
            "canceled": 0,
            "expired": 0,
        },
        "created_at": _CREATED_AT,
        "expires_at": _EXPIRES_AT,
        "ended_at": _EXPIRES_AT if ended else None,
        "archived_at": None,
        "cancel_initiated_at": None,
        "results_url": results_url,
    }


def error_body(error: Error, request_id: str | None) -> dict[str, Any]:
    """The real API's error body: ``{"type": "error", "error": {...}, "request_id": ...}``."""
    detail: dict[str, Any] = {"type": error.type, "message": error.message}
    if error.error_code is not None:
        detail["details"] = {"error_code": error.error_code}
    return {"type": "error", "error": detail, "request_id": request_id}


# The fake tokenizer: four characters a token, and Haiku 5.5's tokenizer about 30% denser.
_DENSER_TOKENIZERS = {"claude-haiku-5-5": 1.3}


def count_input_tokens(params: Mapping[str, Any]) -> int:
    """The fake's count of a request's input tokens: system, messages and tool definitions."""
    system = params.get("system", "")
    texts = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    for message in params.get("messages", []):
        content = message.get("content", "")
        texts += [content] if isinstance(content, str) else [json.dumps(content)]
    texts += [json.dumps(tool, sort_keys=True) for tool in params.get("tools", [])]
    model = str(params.get("model", ""))
    factor = next((f for p, f in _DENSER_TOKENIZERS.items() if model.startswith(p)), 1.0)
    return math.ceil(sum(len(text) for text in texts) / 4 * factor)


def invalid_message_params(params: Any) -> str | None:
    """What the API would say about `params` missing a required field, or None."""
    if not isinstance(params, dict):
        return "the body must be a JSON object"
    for key in ("model", "max_tokens", "messages"):
        if key not in params:
            return f"{key}: Field required"
    return None
