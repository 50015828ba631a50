"""A rewrite run in a test workspace, with or without the fake Anthropic server, and a fake
model that summarizes by restating the facts it is given."""

from __future__ import annotations

import re

from memoryd.jobs.environment import open_state
from memoryd.jobs.rewrite import build_rewrite
from memoryd.llm.anthropic_client import AnthropicClient
from memoryd.rewrite.report import RewriteReport
from memoryd.settings import Settings
from tests.fakes.fake_anthropic import RecordedRequest, ToolUse
from tests.support.harness import TEST_KEY, Workspace

_FACT_LINE = re.compile(r"^\[([a-z0-9-]+-\d{3,})\] (.*) \([a-z]+, since [0-9-]+\)$", re.MULTILINE)


def summarizer(request: RecordedRequest) -> ToolUse:
    """A fake model that summarizes by restating each given fact, citing its id."""
    text = request.body["messages"][0]["content"]
    lines = [f"- {fact} [{fact_id}]" for fact_id, fact in _FACT_LINE.findall(text)]
    return ToolUse({"summary": "\n".join(lines)})


def run(
    ws: Workspace, settings: Settings, base_url: str | None, *, poll_only: bool = False
) -> RewriteReport:
    env = ws.environment()
    with open_state(settings, env) as state:
        if base_url is None:
            return build_rewrite(settings, env, state, None).run(poll_only=poll_only)
        with AnthropicClient(
            api_key=TEST_KEY,
            base_url=base_url,
            timeout_seconds=5,
            max_attempts=2,
            sleep=ws.waits.append,
            tool_choices=ws.tool_choices,
        ) as client:
            return build_rewrite(settings, env, state, client).run(poll_only=poll_only)
