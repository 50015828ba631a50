"""The stdout events of each Paperclip adapter, turned into dialogue parts.

A Paperclip run log carries the raw stdout of whichever agent CLI the agent's adapter runs. Each
complete stdout line is one JSON event; its shape depends on the adapter:

- `claude_local` (`claude -p --output-format stream-json`) and `cursor` (`cursor-agent
  --output-format stream-json`, the same envelope): `assistant` / `user` events carrying an
  Anthropic-style `message`. Events with `parent_tool_use_id` set belong to a subagent (a Task
  call): they are kept apart as a sidechain conversation named after that call, and the prompt
  the main agent gave the subagent is marked as the main agent's words, never the user's.
- `codex_local` (`codex exec --json`): `item.completed` events. `agent_message` text is the
  assistant's; `command_execution` output and `mcp_tool_call` results are untrusted tool output;
  `reasoning`, `file_change`, `web_search`, `todo_list` and `error` items carry no dialogue.
- `gemini_local` (`gemini --output-format stream-json`): `message` events with `role` and
  string `content` (assistant replies stream as `delta` pieces, merged back into one message),
  `tool_result` events with `output`; also the envelope Paperclip's own gemini parser reads:
  `assistant` / `user` events whose `message` is a string or has `text` / `output_text` parts,
  top-level `text` events, and `tool_call` events whose `completed` subtype carries the result.
- `opencode_local` (`opencode run --format json`): `text` events whose `part.text` is the
  assistant's, `tool_use` events whose `part.state.output` is tool output, `reasoning` events
  (thinking: dropped).
- `pi_local` (`pi --mode json`): `message_end` events carrying a finished pi message (`role`
  user, assistant or toolResult, content blocks as in OpenClaw sessions).
- Lifecycle events of all of them (`system`, `result`, `thread.started`, `turn.*`,
  `item.started`, `init`, `step_*`, `agent_*`, ...) carry no dialogue: the final `result`
  repeats the last answer.

Anything else (an `openclaw` adapter's output, an event type a later CLI adds, a line that is
not JSON) is counted as skipped by the caller and shows in the logs and `memoryd status`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memoryd.sources.claude_code import clean_user_part
from memoryd.sources.model import Role
from memoryd.sources.records import Part, content_parts, text_of, tool_output_text

UNKNOWN = "stdout event of an unknown shape"
DELTA = "delta"  # the merge id of streamed pieces of one reply, joined as written

_LIFECYCLE = frozenset(
    {
        "system",
        "result",
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "init",
        "step_start",
        "step_finish",
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_update",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "tool_use",  # gemini's call announcement (opencode's carries output: handled first)
        "tool_call",  # a call starting (a completed one carries output: handled first)
        "stream_event",
        "session",  # pi's session header
        "reasoning",  # opencode's thinking: never sent, like every thinking block
        "thinking",  # gemini's
        "step_complete",
        "error",  # an error the CLI printed: no dialogue (the run's stderr says more)
    }
)
_SILENT_CODEX_ITEMS = frozenset({"reasoning", "file_change", "web_search", "todo_list", "error"})


@dataclass
class Decoded:
    """The dialogue of one event (possibly none) and how it groups."""

    parts: list[Part]
    merge_id: str | None = None  # pieces of one message, joined back
    subagent: str | None = None  # the Task call a subagent event belongs to
    known: bool = True  # False: a shape this module does not know (counted as skipped)


def decode_event(event: dict[str, object]) -> Decoded:
    """The dialogue one stdout event carries, by its adapter's shape (module docstring)."""
    kind = event.get("type")
    if not isinstance(kind, str):
        return Decoded([], known=False)
    handler = _HANDLERS.get(kind)
    decoded = handler(event) if handler is not None else None
    if decoded is not None:
        return decoded
    return Decoded([], known=kind in _LIFECYCLE)


def _claude_event(event: dict[str, object]) -> Decoded | None:
    message = event.get("message")
    if isinstance(message, str):  # gemini's envelope as Paperclip reads it: the text alone
        message = {"content": message}
    if not isinstance(message, dict):
        return None
    if "content" not in message and isinstance(message.get("text"), str):
        message = {**message, "content": message["text"]}
    return _claude(str(event["type"]), message, event)


def _codex_event(event: dict[str, object]) -> Decoded | None:
    item = event.get("item")
    return _codex(item) if isinstance(item, dict) else None


def _gemini_event(event: dict[str, object]) -> Decoded | None:
    if event.get("role") not in {"user", "assistant"}:
        return None
    return _gemini_message(event)


def _tool_result_event(event: dict[str, object]) -> Decoded | None:
    if "output" not in event:
        return None
    return _tool(tool_output_text(event.get("output")))


def _text_event(event: dict[str, object]) -> Decoded | None:
    part = event.get("part")
    if not isinstance(part, dict):
        # gemini's top-level text event
        loose = event.get("text", event.get("content"))
        if not isinstance(loose, str):
            return None
        return Decoded([Part("assistant", loose)] if loose.strip() else [])
    text = text_of(part.get("text"))
    return Decoded([Part("assistant", text)] if text else [], merge_id=_string(part, "id"))


def _tool_call_event(event: dict[str, object]) -> Decoded | None:
    """gemini's `tool_call` event: `{"subtype": "completed", "tool_call": {NAME: {"result"}}}`."""
    subtype = event.get("subtype")
    call = event.get("tool_call")
    if subtype not in {"completed", "complete", "finished"} or not isinstance(call, dict):
        return None  # a call starting: lifecycle
    outputs = [
        payload.get("result", payload.get("output", payload.get("error")))
        for payload in call.values()
        if isinstance(payload, dict)
    ]
    return _tool("\n".join(tool_output_text(output) for output in outputs if output is not None))


def _tool_use_event(event: dict[str, object]) -> Decoded | None:
    part = event.get("part")
    if not isinstance(part, dict):
        return None  # gemini announces a call: no dialogue (lifecycle)
    state = part.get("state")
    return _tool(tool_output_text(state.get("output") if isinstance(state, dict) else None))


def _message_end_event(event: dict[str, object]) -> Decoded | None:
    message = event.get("message")
    return _pi(message) if isinstance(message, dict) else None


def _tool(text: str) -> Decoded:
    return Decoded([Part("tool", text, trusted=False)] if text.strip() else [])


_HANDLERS: dict[str, Callable[[dict[str, object]], Decoded | None]] = {
    "assistant": _claude_event,
    "user": _claude_event,
    "item.completed": _codex_event,
    "message": _gemini_event,
    "tool_result": _tool_result_event,
    "text": _text_event,
    "tool_use": _tool_use_event,
    "tool_call": _tool_call_event,
    "message_end": _message_end_event,
}


def _claude(kind: str, message: dict[str, object], event: dict[str, object]) -> Decoded:
    parent = event.get("parent_tool_use_id")
    subagent = parent if isinstance(parent, str) and parent else None
    role: Role = "assistant" if kind == "assistant" else "user"
    parts = content_parts(message.get("content"), role)
    if role == "user":
        parts = [clean_user_part(part) for part in parts]
        parts = [part for part in parts if part.text.strip()]
        if subagent is not None:
            # The subagent's prompt was written by the main agent, not said by the user.
            parts = [
                Part("assistant", f"(task given to a subagent)\n{p.text}")
                if p.role == "user"
                else p
                for p in parts
            ]
    merge_id = message.get("id") if role == "assistant" else None
    return Decoded(
        parts, merge_id=merge_id if isinstance(merge_id, str) else None, subagent=subagent
    )


def _codex(item: dict[str, object]) -> Decoded:
    kind = item.get("type")
    if kind == "agent_message":
        text = text_of(item.get("text"))
        return Decoded([Part("assistant", text)] if text else [])
    if kind == "command_execution":
        text = tool_output_text(item.get("aggregated_output"))
        return Decoded([Part("tool", text, trusted=False)] if text.strip() else [])
    if kind == "mcp_tool_call":
        result = item.get("result")
        content = result.get("content") if isinstance(result, dict) else None
        text = tool_output_text(content)
        return Decoded([Part("tool", text, trusted=False)] if text.strip() else [])
    if isinstance(kind, str) and kind in _SILENT_CODEX_ITEMS:
        return Decoded([])
    return Decoded([], known=False)


def _gemini_message(event: dict[str, object]) -> Decoded:
    role: Role = "user" if event.get("role") == "user" else "assistant"
    content = event.get("content")
    text = content if isinstance(content, str) else tool_output_text(content)
    if not text.strip() and not (role == "assistant" and text):
        return Decoded([])
    # Streamed pieces of one reply share a merge id: the reader joins them.
    merge_id = DELTA if role == "assistant" and event.get("delta") is True else None
    return Decoded([Part(role, text)], merge_id=merge_id)


def _pi(message: dict[str, object]) -> Decoded:
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        return Decoded(content_parts(content, "user"))
    if role == "assistant":
        return Decoded(content_parts(content, "assistant"))
    if role == "toolResult":
        text = "\n".join(p.text for p in content_parts(content, "tool"))
        return Decoded([Part("tool", text, trusted=False)] if text.strip() else [])
    return Decoded([], known=False)


def _string(mapping: dict[str, object], key: str) -> str | None:
    value = mapping.get(key)
    return value if isinstance(value, str) and value else None
