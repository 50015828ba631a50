"""What the Messages API's failed answers mean to memoryd, read from their status, error code,
headers and message alone: which are retried, which are a spend limit, which say the run cannot
go on (the key, the account, the model). Apart from the adapter, which alone imports the SDK,
so the policy reads as one table.

Failures are typed by what the caller can do (`memoryd.llm.base`). About the account, key, model
or endpoint, whatever is sent (`UnusableLLMError`, exit 78): 401 authentication, 403 permission,
a 400 saying the credit balance is too low, and, for a message or a batch, 404 (the model is
unknown or retired, or the base URL is wrong), 413 (the endpoint's size limit: chunks are
bounded by `llm.chunk_tokens`) and a 400 saying the model does not support the tool choice sent
(`ToolChoiceRefusedError`, which the adapter answers by resending with `auto`). About this
request (`PermanentLLMError`): any other 4xx, e.g. a 400 "prompt is too long" for one chunk, or
a 404 for one batch id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryd.llm.base import (
    LLMError,
    PermanentLLMError,
    SpendLimitError,
    ToolChoiceRefusedError,
    TransientLLMError,
    UnusableKind,
    UnusableLLMError,
)

_RETRYABLE_STATUSES = frozenset({408, 409, 429})
_FIRST_SERVER_ERROR = 500
_PAYMENT_REQUIRED = 402
SPEND_LIMIT_CODES = frozenset(
    {
        "enforced_spend_limit_reached",
        "contract_spend_limit_reached",
        "linked_organization_spend_limit_reached",
    }
)
# The API's own message is useful in logs and errors; a huge one is not.
MAX_MESSAGE_CHARS = 500
# The real API's answer when the prepaid credit is used up (a 400 invalid_request_error):
# "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing
# to upgrade or purchase credits."
_CREDIT_TOO_LOW = "credit balance is too low"
# Operations that name a model and carry chunk-sized bodies: a 404 there means the model (or
# the route), a 413 the endpoint's size limit. Elsewhere a 404 is about one batch id.
_MODEL_OPERATIONS = frozenset({"messages.create", "batches.create"})
_ACCOUNT_STATUSES: dict[int, UnusableKind] = {401: "authentication", 403: "permission"}
_MODEL_STATUSES: dict[int, UnusableKind] = {404: "model_not_found", 413: "request_too_large"}
_BAD_REQUEST = 400
# The real API's answer to a forced tool choice for a model that accepts only `auto`
# (a 400 invalid_request_error): 'tool_choice type "tool" and "any" are not supported for
# this model'. Matched loosely, on its two key phrases, so a rewording keeps working.
_TOOL_CHOICE = "tool_choice"
_NOT_SUPPORTED = "not supported"


def is_spend_limit(error_code: str | None, status: int) -> bool:
    """Whether an answer says a spend limit is reached (never retried)."""
    return error_code in SPEND_LIMIT_CODES or status == _PAYMENT_REQUIRED


def is_transient_status(status: int) -> bool:
    """Whether a status is worth retrying when the server gives no hint."""
    return status in _RETRYABLE_STATUSES or status >= _FIRST_SERVER_ERROR


def should_retry_header(headers: Mapping[str, str]) -> bool | None:
    """The server's own `x-should-retry` verdict, or None when it gives none."""
    value = headers.get("x-should-retry")
    if value == "true":
        return True
    if value == "false":
        return False
    return None


def is_tool_choice_refusal(status: int, api_message: str | None) -> bool:
    """Whether an answer says the model does not support the tool choice that was sent."""
    message = (api_message or "").lower()
    return status == _BAD_REQUEST and _TOOL_CHOICE in message and _NOT_SUPPORTED in message


def unusable_kind(operation: str, status: int, api_message: str | None) -> UnusableKind | None:
    """The run-level problem an answer shows, or None when it is about this request only."""
    if status in _ACCOUNT_STATUSES:
        return _ACCOUNT_STATUSES[status]
    if status == _BAD_REQUEST and _CREDIT_TOO_LOW in (api_message or "").lower():
        return "billing"
    if operation in _MODEL_OPERATIONS and status in _MODEL_STATUSES:
        return _MODEL_STATUSES[status]
    return None


def clip(text: str) -> str:
    """The API's message cut to a length fit for a log line or an error."""
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "..."


@dataclass(frozen=True)
class FailedAnswer:
    """An error answer of the API as plain data, read from the SDK's error by the adapter."""

    status: int
    error_type: str | None
    error_code: str | None
    api_message: str | None
    request_id: str | None
    headers: Mapping[str, str]


def translate_answer(
    operation: str, answer: FailedAnswer, endpoint: str, model: str | None
) -> LLMError:
    """memoryd's error for a failed answer, typed by what the caller can do about it."""
    description = f"{operation} to {endpoint} failed: HTTP {answer.status}"
    if answer.error_type:
        description += f" {answer.error_type}"
    if answer.api_message:
        description += f": {clip(answer.api_message)}"
    if answer.request_id:
        description += f" (request {answer.request_id})"
    details: dict[str, Any] = {
        "status_code": answer.status,
        "error_type": answer.error_type,
        "error_code": answer.error_code,
        "request_id": answer.request_id,
        "endpoint": endpoint,
    }
    if is_spend_limit(answer.error_code, answer.status):
        return SpendLimitError(description, **details)
    if should_retry_header(answer.headers) or is_transient_status(answer.status):
        return TransientLLMError(description, **details)
    if is_tool_choice_refusal(answer.status, answer.api_message):
        api_message = clip(answer.api_message or "")
        return ToolChoiceRefusedError(description, model=model, api_message=api_message, **details)
    kind = unusable_kind(operation, answer.status, answer.api_message)
    if kind is not None:
        api_message = clip(answer.api_message or "")
        return UnusableLLMError(kind, description, model=model, api_message=api_message, **details)
    return PermanentLLMError(description, **details)
