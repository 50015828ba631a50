"""`memoryd check --online` against the fake Anthropic server: the server fixture, its config,
and a run of the command."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.configs import anthropic_llm, ops_config
from tests.fakes.fake_anthropic import FakeAnthropicServer, RecordedRequest, ToolUse
from tests.support.cli import json_lines, memoryd

KEY = "sk-ant-test-cli-0000000000000000"
MODEL = "claude-haiku-5-5"
REWRITE_MODEL = "claude-sonnet-5-5"


def answer(_request: RecordedRequest) -> ToolUse:
    return ToolUse(
        {
            "facts": [
                {
                    "entity": {"name": "Jane Doe", "kind": "person"},
                    "fact": "Joined Acme as CTO",
                    "category": "milestone",
                }
            ],
            "entities": [{"name": "Jane Doe", "kind": "person", "significant": True}],
        }
    )


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(handler=answer, api_key=KEY, models={MODEL, REWRITE_MODEL}) as fake:
        yield fake


def write_config(folder: Path, base_url: str, *, rewrite_model: str = REWRITE_MODEL) -> None:
    (folder / "logs").mkdir(exist_ok=True)
    (folder / "logs" / "a.jsonl").write_text(
        json.dumps(
            {
                "role": "user",
                "content": "Jane Doe joined Acme as CTO",
                "timestamp": "2026-03-01T09:00:00Z",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    llm = anthropic_llm(base_url, f'model = "{MODEL}"', f'rewrite_model = "{rewrite_model}"')
    (folder / "memoryd.toml").write_text(ops_config(llm=llm), encoding="utf-8")
    # `init` before `check`, as a set-up runs them: `check` reports a folder that is no store.
    init = memoryd("init", cwd=folder, env={"ANTHROPIC_API_KEY": KEY})
    assert init.returncode == 0, init.stdout + init.stderr


def run(folder: Path, *args: str, key: str = KEY) -> tuple[int, str, list[dict[str, object]]]:
    result = memoryd("--log-format", "json", *args, cwd=folder, env={"ANTHROPIC_API_KEY": key})
    return result.returncode, result.stdout, json_lines(result.stderr)
