"""`memoryd mcp` with a real MCP client session over stdio: initialize, list the tools, call them.

The server is a real `memoryd mcp` process over the store a real heartbeat filed; the client is
the official SDK's. `remember` only queues: the next heartbeat (a real process) files it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent
from tests.support.cli import write_config
from tests.support.reading import JANE, child_environment, git, memoryd, write_transcript

from memoryd.errors import EXIT_OK

pytestmark = pytest.mark.slow


def _object(result: Any) -> dict[str, Any]:
    """A tool's answer: an object in structuredContent, the same JSON as text."""
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict), result
    blocks = [block.text for block in result.content if isinstance(block, TextContent)]
    assert json.loads("".join(blocks)) == result.structured_content
    return dict(result.structured_content)


def _error(result: Any) -> str:
    assert result.is_error, result
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def _session(folder: Path) -> dict[str, Any]:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "--log-format", "json", "mcp", "--agent", "ops"],
        env=child_environment(folder),
        cwd=str(folder),
    )
    seen: dict[str, Any] = {}
    with (folder / "mcp-stderr.log").open("w", encoding="utf-8") as errors:
        async with (
            stdio_client(server, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            seen["server"] = initialized.server_info.name
            tools = await session.list_tools()
            seen["tools"] = {tool.name: tool for tool in tools.tools}
            call = session.call_tool
            seen["search"] = _object(await call("search", {"query": "Lisbon"}))
            seen["bad_kind"] = _error(await call("search", {"query": "x", "kinds": ["nope"]}))
            seen["entity"] = _object(await call("get_entity", {"ref": "people/jane-doe"}))
            seen["missing"] = _error(await call("get_entity", {"ref": "nobody"}))
            seen["context"] = _object(await call("context", {}))
            seen["remember"] = _object(
                await call(
                    "remember", {"text": "Moved to Porto", "entity": "Jane Doe", "kind": "person"}
                )
            )
            seen["bad"] = _error(await call("remember", {"text": "   ", "entity": None}))
            seen["too_long"] = _error(await call("remember", {"text": "word " * 300}))
    return seen


def test_an_mcp_client_searches_reads_and_remembers(tmp_path: Path) -> None:
    write_config(tmp_path)
    write_transcript(tmp_path)
    assert memoryd(tmp_path, "init").returncode == EXIT_OK
    assert memoryd(tmp_path, "heartbeat").returncode == EXIT_OK
    head = git(tmp_path, "rev-parse", "HEAD")

    seen = anyio.run(_session, tmp_path)

    assert seen["server"] == "memoryd"
    tools = seen["tools"]
    assert sorted(tools) == ["context", "get_entity", "remember", "search"]
    assert tools["context"].description.startswith("Call once at the start of a task")
    assert all(tool.description.startswith("Call ") for tool in tools.values())
    assert all(tool.output_schema["type"] == "object" for tool in tools.values())
    assert tools["search"].annotations.read_only_hint is True
    assert seen["search"]["hits"][0]["id"] == "jane-doe-002"
    assert seen["search"]["hits"][0]["path"] == f"{JANE}/items.json"
    assert seen["search"]["hits"][0]["entity"] == "Jane Doe"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", seen["search"]["hits"][0]["date"])
    assert [hit["id"] for hit in seen["search"]["hits"]].count("jane-doe-002") == 1
    assert seen["search"]["reads"] == {"facts": 1, "queued": True, "error": None}
    assert "nope" in seen["bad_kind"]
    assert seen["entity"]["ref"] == "people/jane-doe"
    assert [fact["id"] for fact in seen["entity"]["facts"]] == ["jane-doe-001", "jane-doe-002"]
    assert seen["entity"]["summary"].startswith("# Jane Doe")
    assert "no entity 'nobody'" in seen["missing"] and "`search`" in seen["missing"]
    assert seen["context"]["text"].startswith("# Memory for ops, ")
    assert seen["context"]["reads"]["queued"] is True
    assert seen["remember"] == {"queued": True, "filed_by": "the next heartbeat"}
    assert "nothing to remember" in seen["bad"]
    assert "at most 1000" in seen["too_long"] and "split it" in seen["too_long"]
    # Read-only: the MCP process committed and wrote nothing in the store.
    assert git(tmp_path, "rev-parse", "HEAD") == head
    assert git(tmp_path, "status", "--porcelain") == ""
    stderr = (tmp_path / "mcp-stderr.log").read_text(encoding="utf-8")
    events = [json.loads(line)["event"] for line in stderr.splitlines() if line.startswith("{")]
    assert "mcp.started" in events and "mcp.remembered" in events

    result = memoryd(tmp_path, "heartbeat")
    assert result.returncode == EXIT_OK, result.stderr
    facts = json.loads((tmp_path / "store" / JANE / "items.json").read_text(encoding="utf-8"))
    assert [fact["fact"] for fact in facts][-1] == "Moved to Porto"
    assert facts[1]["accessCount"] == 1  # read through search (and get_entity), counted once
    summary = (tmp_path / "store" / JANE / "summary.md").read_text(encoding="utf-8")
    assert "Moved to Porto" in summary
