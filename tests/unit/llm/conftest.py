"""Fixtures for the LLM tests: a running fake Anthropic server and clients that talk to it.

The clients are the real `AnthropicClient` over the real SDK and real HTTP; only `sleep` is
swapped for a recorder, so retry waits are observed instead of slept.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer

from memoryd.llm.anthropic_client import AnthropicClient
from memoryd.llm.base import ToolRequest, ToolSpec

TEST_KEY = "sk-ant-test-0000000000000000"

ClientFactory = Callable[..., AnthropicClient]


@pytest.fixture
def fake_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def waits() -> list[float]:
    """Every wait the client asked for between attempts, in order."""
    return []


@pytest.fixture
def make_client(fake_server: FakeAnthropicServer, waits: list[float]) -> Iterator[ClientFactory]:
    clients: list[AnthropicClient] = []

    def build(**overrides: Any) -> AnthropicClient:
        options: dict[str, Any] = {
            "api_key": TEST_KEY,
            "base_url": fake_server.base_url,
            "timeout_seconds": 5.0,
            "max_attempts": 4,
            "sleep": waits.append,
            "rng": random.Random(1234),  # noqa: S311 - seeded jitter, not cryptography
        }
        options.update(overrides)
        client = AnthropicClient(**options)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


RequestFactory = Callable[..., ToolRequest]


@pytest.fixture
def make_request() -> RequestFactory:
    """Build a small extraction-like request; any field can be overridden."""
    return _tool_request


def _tool_request(**overrides: Any) -> ToolRequest:
    fields: dict[str, Any] = {
        "model": "claude-haiku-5-5",
        "system": "You extract durable facts from a transcript.",
        "tool": ToolSpec(
            name="record_memories",
            description="Record what is worth keeping.",
            input_schema={
                "type": "object",
                "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
                "required": ["facts"],
                "additionalProperties": False,
            },
        ),
        "user_content": "<transcript>Jane joined Acme as CTO.</transcript>",
        "max_tokens": 1024,
    }
    fields.update(overrides)
    return ToolRequest(**fields)
