"""`memoryd mcp`: a stdio MCP server, on the official MCP Python SDK, for agents to read memory.

Tools:

- `search(query, limit, kinds)`: the store's full-text search, decay-ranked (`memoryd search`);
- `get_entity(ref)`: an entity's summary and all its facts, with status and tier (by ref, name
  or alias);
- `context(routine, budget)`: the agent's start-of-run bundle (`memoryd context`);
- `remember(text, entity, kind)`: queue a memory for the next heartbeat, which files it through
  the normal pipeline, under the lock, in its commit (`memoryd.reading.remember`).

The server is read-only with respect to the store: it never takes the writer's lock nor writes
a store file, so any number may run beside the daemon. What it returns counts as read by its
agent (`--agent`, default `mcp`), as for `search` and `context`. Its stdout is the protocol;
logs go to stderr as for every command.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from mcp.server.mcpserver import MCPServer

from memoryd import __version__
from memoryd.errors import MemorydError
from memoryd.jobs.environment import Environment
from memoryd.jobs.reading import agent_context, entity_view, search_store
from memoryd.logs import get_logger
from memoryd.reading.context import DEFAULT_BUDGET
from memoryd.reading.remember import queue_memory
from memoryd.settings import LoadedConfig, Settings, state_directory

log = get_logger(__name__)

INSTRUCTIONS = (
    "memoryd is the user's long-term memory: people, companies, projects and their facts, daily "
    "notes, skills and how the user works. Call `context` once at the start of a task, `search` "
    "before answering from assumption, `get_entity` for everything about one entity, and "
    "`remember` for something worth keeping (it is filed by the next heartbeat)."
)


def build_server(settings: Settings, env: Environment, *, agent: str) -> MCPServer[Any]:
    """The MCP server with memoryd's tools for `agent`."""
    server: MCPServer[Any] = MCPServer(
        name="memoryd", version=__version__, instructions=INSTRUCTIONS
    )

    @server.tool(
        name="search",
        description="Full-text search of the memory, recent and often-used first. kinds: any "
        "of fact, summary, note, skill, tacit (default all). Each hit has its id, entity ref, "
        "file path and line; superseded or retracted facts are marked.",
    )
    def search(query: str, limit: int = 10, kinds: list[str] | None = None) -> str:
        hits = search_store(
            settings, env, query, agent=agent, limit=max(1, min(limit, 50)), kinds=kinds or ()
        )
        log.info("mcp.search", agent=agent, hits=len(hits))
        return json.dumps([hit.to_json() for hit in hits], indent=1, sort_keys=True)

    @server.tool(
        name="get_entity",
        description="One entity's summary and all its facts (id, text, status, tier), by ref "
        "such as people/jane-doe, or by name.",
    )
    def get_entity(ref: str) -> str:
        try:
            view = entity_view(settings, env, ref, agent=agent)
        except MemorydError as error:
            return json.dumps({"error": str(error)})
        return json.dumps(asdict(view), indent=1, sort_keys=True)

    @server.tool(
        name="context",
        description="The start-of-run memory bundle for this agent: how the user works, its "
        "skills, the summaries of the most active entities, today's and yesterday's notes.",
    )
    def context(routine: str | None = None, budget: int = DEFAULT_BUDGET) -> str:
        bundle = agent_context(
            settings, env, agent=agent, routine=routine, budget=max(200, min(budget, 50_000))
        )
        return bundle.text

    @server.tool(
        name="remember",
        description="Ask memoryd to keep something. With entity (a name) and kind (person, "
        "company, project, area or resource) it becomes a fact of that entity; without, a note "
        "of the day. Filed by the next heartbeat, not at once.",
    )
    def remember(text: str, entity: str | None = None, kind: str | None = None) -> str:
        try:
            path = queue_memory(
                state_directory(settings, env.environ),
                agent=agent,
                text=text,
                entity=entity,
                kind=kind,
                at=env.clock().astimezone(settings.schedule.zone),
            )
        except (MemorydError, OSError) as error:
            log.warning("mcp.not_remembered", agent=agent, reason=str(error))
            return json.dumps({"queued": False, "error": str(error)})
        log.info("mcp.remembered", agent=agent, path=str(path))
        return json.dumps({"queued": True, "filed_by": "the next heartbeat"})

    return server


def serve(config: LoadedConfig, environ: Mapping[str, str], *, agent: str) -> None:
    """Serve MCP over stdin/stdout until the client closes it."""
    env = Environment.live(environ)
    log.info("mcp.started", agent=agent, store=str(config.settings.store.path))
    build_server(config.settings, env, agent=agent).run("stdio")
    log.info("mcp.stopped", agent=agent)
