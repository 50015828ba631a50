"""The Messages API parameters of one `ToolRequest`, shared by a single call and a batch entry.
Built from plain data, so a test or another adapter can read the exact request without the SDK.
"""

from __future__ import annotations

import copy
from typing import Any

from memoryd.llm.base import ToolRequest


def message_params(request: ToolRequest) -> dict[str, Any]:
    """Return the Messages API parameters for `request`: forced tool, cached stable prefix."""
    cache: dict[str, Any] = {"cache_control": {"type": "ephemeral"}} if request.cache_prefix else {}
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "tools": [
            {
                "name": request.tool.name,
                "description": request.tool.description,
                # A deep copy: the SDK or a retry must never alter the caller's schema.
                "input_schema": copy.deepcopy(dict(request.tool.input_schema)),
                **cache,
            }
        ],
        "tool_choice": {"type": "tool", "name": request.tool.name},
        "messages": [{"role": "user", "content": request.user_content}],
    }
    # The API refuses an empty text block, so an empty system prompt is left out altogether.
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, **cache}]
    return params
