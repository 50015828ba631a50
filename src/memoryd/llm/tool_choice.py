"""Which tool choice each model accepts, and the one call that falls back to an automatic one.

memoryd forces its one tool (`tool_choice: {"type": "tool"}`) wherever the model accepts it:
the answer then cannot be anything but a tool call. Some models refuse a forced choice outright,
with a 400 `invalid_request_error` ('tool_choice type "tool" and "any" are not supported for
this model'). They get `tool_choice: {"type": "auto"}` instead, with the tool marked `strict`
(its input is decoded against the schema) and a line in the system prompt asking for an answer
through the tool only (`memoryd.llm.params`). An answer without the tool call is then an invalid
answer like any other: the caller asks once more, then fails the chunk as before.

Which models get which choice:
- a known table of model families that refuse a forced choice (by prefix, so dated snapshots
  match): the 5.5 line's Sonnet and Opus and every Fable and Mythos 5.x, as of 2026-12;
- any other model that answers a forced choice with that 400 is learnt: the same request is
  sent again at once with `auto` and the model gets `auto` for the rest of the process. The
  refused request costs nothing (the API bills no 400) and is never charged to a chunk.

Invariants: a model is only ever moved from forced to automatic, never back, within a process;
the memory is shared by every client of the process (`PROCESS_TOOL_CHOICES`) and thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog

from memoryd.llm.base import ToolChoiceRefusedError, ToolRequest, ToolResult

# Model families whose models refuse a forced tool choice (matched as prefixes of the model id).
REFUSING_FORCED_TOOL: tuple[str, ...] = (
    "claude-sonnet-5-5",
    "claude-opus-5-5",
    "claude-fable-5",
    "claude-mythos-5",
)

# Sends `request` with a forced tool choice (True) or an automatic one (False).
Send = Callable[[ToolRequest, bool], ToolResult]


def _logger() -> Any:
    # Fetched per event, as in the adapter, so that tests capturing logs see the events.
    return structlog.get_logger(__name__)


def known_to_refuse_forced_tool(model: str) -> bool:
    """Whether `model` belongs to a family known to refuse a forced tool choice."""
    return model.startswith(REFUSING_FORCED_TOOL)


class ToolChoices:
    """The tool choice each model gets: forced unless the model is known or learnt to refuse
    it. See the module docstring."""

    def __init__(self) -> None:
        self._learnt: set[str] = set()
        self._lock = threading.Lock()

    def forces(self, model: str) -> bool:
        """Whether requests to `model` force their tool (else they use `auto`)."""
        if known_to_refuse_forced_tool(model):
            return False
        with self._lock:
            return model not in self._learnt

    def learn(self, model: str) -> None:
        """Remember that `model` refuses a forced tool choice, for the rest of the process."""
        with self._lock:
            self._learnt.add(model)

    def call(self, request: ToolRequest, send: Send) -> ToolResult:
        """Send `request` with the choice its model accepts. A forced request the model
        refuses is learnt and sent again at once with `auto`; raise ToolChoiceRefusedError
        only when the automatic one is refused too."""
        forced = self.forces(request.model)
        try:
            return send(request, forced)
        except ToolChoiceRefusedError as error:
            if not forced:
                raise
            self.learn(request.model)
            _logger().warning(
                "llm.tool_choice_auto",
                model=request.model,
                tool=request.tool.name,
                request_id=error.request_id,
                endpoint=error.endpoint,
                api_message=error.api_message,
            )
        return send(request, False)


# The process's one memory of learnt models: every client the jobs make shares it.
PROCESS_TOOL_CHOICES = ToolChoices()
