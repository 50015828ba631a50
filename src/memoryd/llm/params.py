"""The Messages API parameters of one `ToolRequest`, shared by a single call and a batch entry.
Built from plain data, so a test or another adapter can read the exact request without the SDK.

A forced request names its tool in `tool_choice`. An automatic one (for the models that refuse a
forced choice, `memoryd.llm.tool_choice`) uses `{"type": "auto"}`, marks the tool `strict` and
ends the system prompt with `ANSWER_THROUGH_TOOL`, so that the prefix stays the same for every
request to that model and is still cached. Strict decoding takes only part of JSON Schema: a
strict tool's schema leaves out the bounds it does not take (string lengths and patterns,
numeric bounds, item counts other than "at least one") and closes every object
(`additionalProperties: false`). Shorter, never looser: the answer is validated against the full
contract (the pydantic models) either way.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from memoryd.llm.base import ToolRequest

# Keywords strict decoding does not take; "minItems" is kept when it is 0 or 1.
_NOT_STRICT = frozenset(
    {
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
    }
)

ANSWER_THROUGH_TOOL = (
    "Answer only by calling the {tool} tool, exactly once, with an input that follows its "
    "schema. Do not answer in text: a text answer cannot be used."
)


def message_params(request: ToolRequest, *, forced: bool = True) -> dict[str, Any]:
    """Return the Messages API parameters for `request`: its tool, forced (or automatic and
    strict, with the instruction to answer through it), and the cached stable prefix."""
    cache: dict[str, Any] = {"cache_control": {"type": "ephemeral"}} if request.cache_prefix else {}
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "tools": [
            {
                "name": request.tool.name,
                "description": request.tool.description,
                # A copy: the SDK or a retry must never alter the caller's schema.
                "input_schema": (
                    copy.deepcopy(dict(request.tool.input_schema))
                    if forced
                    else strict_schema(request.tool.input_schema)
                ),
                **({} if forced else {"strict": True}),
                **cache,
            }
        ],
        "tool_choice": (
            {"type": "tool", "name": request.tool.name} if forced else {"type": "auto"}
        ),
        "messages": [{"role": "user", "content": request.user_content}],
    }
    system = request.system
    if not forced:
        instruction = ANSWER_THROUGH_TOOL.format(tool=request.tool.name)
        system = f"{system}\n\n{instruction}" if system else instruction
    # The API refuses an empty text block, so an empty system prompt is left out altogether.
    if system:
        params["system"] = [{"type": "text", "text": system, **cache}]
    return params


def strict_schema(schema: Any) -> Any:
    """A new copy of `schema` that strict decoding takes: the keywords it does not take left out,
    every object closed to other properties."""
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    kept = {
        key: _strict_properties(value) if key == "properties" else strict_schema(value)
        for key, value in schema.items()
        if key not in _NOT_STRICT and not (key == "minItems" and value not in (0, 1))
    }
    if kept.get("type") == "object":
        kept["additionalProperties"] = False
    return kept


def _strict_properties(properties: Any) -> Any:
    # The keys here are property names, never keywords: a property may be called "pattern".
    if not isinstance(properties, Mapping):
        return properties
    return {name: strict_schema(value) for name, value in properties.items()}
