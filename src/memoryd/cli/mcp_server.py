"""`memoryd mcp`: a stdio MCP server, on the official MCP Python SDK, for agents to read memory.

Tools, each described to the model by when to call it:

- `context(routine, budget)`: the agent's start-of-run bundle (`memoryd context`);
- `search(query, limit, kinds)`: the store's full-text search, decay-ranked (`memoryd search`);
- `get_entity(ref)`: an entity's summary and all its facts, with status and tier (by ref, name
  or alias);
- `remember(text, entity, kind)`: queue a memory for the next heartbeat, which files it through
  the normal pipeline, under the lock, in its commit (`memoryd.reading.remember`).

Each tool answers with an object (`structuredContent`, with an output schema, and the same
JSON as text for clients that read only text). A failure the model can act on (no such entity,
an unknown kind, a memory with no words) is a tool error (`isError: true`) whose text says what
to do. What a reader returns is queued as read for its agent; `reads` in each answer says
whether that worked (a read-only state directory cannot queue, and the answer is given anyway).

The server is read-only with respect to the store: it never takes the writer's lock nor writes
a store file, so any number may run beside the daemon. What it returns counts as read by its
agent (`--agent`, default `mcp`), as for `search` and `context`. Its stdout is the protocol;
logs go to stderr as for every command.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from memoryd import __version__
from memoryd.errors import MemorydError
from memoryd.jobs.environment import Environment
from memoryd.jobs.reading import agent_context, entity_view, find
from memoryd.logs import get_logger
from memoryd.reading.accesses import QueuedReads
from memoryd.reading.context import DEFAULT_BUDGET
from memoryd.reading.remember import MAX_NAME_CHARS, MAX_PER_DAY, MAX_TEXT_CHARS, queue_memory
from memoryd.reading.search import SearchStopped
from memoryd.settings import LoadedConfig, Settings, state_directory

log = get_logger(__name__)

INSTRUCTIONS = (
    "memoryd is the user's long-term memory: people, companies, projects and their facts, daily "
    "notes, skills and how the user works. Call `context` once at the start of a task, `search` "
    "before answering from assumption, `get_entity` for everything about one entity, and "
    "`remember` for something worth keeping (it is filed by the next heartbeat)."
)
# A search stops after this long, so that none outlives its client (the query's work is bounded
# too: memoryd.reading.search.MAX_TERMS).
SEARCH_TIME_LIMIT: Final = timedelta(seconds=20)
_READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
Kind = Literal["fact", "summary", "note", "skill", "tacit"]  # memoryd.reading.search.KINDS


class Reads(BaseModel):
    """Whether the facts returned were queued to be counted as read."""

    facts: int = Field(description="facts returned, to be counted as read")
    queued: bool = Field(description="false: not counted (the state directory is not writable)")
    error: str | None = None

    @classmethod
    def of(cls, reads: QueuedReads) -> Reads:
        return cls(facts=reads.facts, queued=reads.queued, error=reads.error)


class SearchHit(BaseModel):
    kind: str = Field(description="fact, summary, note, skill or tacit")
    id: str = Field(description="the fact's id (for a fact)")
    ref: str | None = Field(description="the entity, for get_entity")
    path: str
    line: int
    text: str
    status: str | None = Field(description="active, superseded or retracted (facts)")
    tier: str = Field(description="hot, warm, cold, or inactive (superseded or retracted)")
    score: float
    entity: str | None = Field(default=None, description="the entity's name (facts, summaries)")
    date: str | None = Field(
        default=None, description="the fact's date or the note's day, YYYY-MM-DD"
    )


class SearchResult(BaseModel):
    hits: list[SearchHit] = Field(description="best first")
    reads: Reads
    query_cut: bool = Field(
        default=False,
        description="true: the query was longer than what is searched (its first 1,000 "
        "characters, at most 64 distinct words); ask a shorter question",
    )


class EntityFact(BaseModel):
    id: str
    fact: str
    category: str
    timestamp: str
    status: str
    supersededBy: str | None  # the store's own field name
    tier: str | None


class EntityResult(BaseModel):
    ref: str
    name: str
    kind: str
    status: str
    path: str
    summary: str
    facts: list[EntityFact]
    reads: Reads


class ContextResult(BaseModel):
    text: str = Field(description="the Markdown bundle")
    tokens: int
    cut: list[str] = Field(description="files only partly included")
    left_out: list[str] = Field(description="files left out to fit the budget")
    reads: Reads


class RememberResult(BaseModel):
    queued: bool
    filed_by: str = Field(description="when it becomes a memory")


def build_server(settings: Settings, env: Environment, *, agent: str) -> MCPServer[Any]:
    """The MCP server with memoryd's tools for `agent`."""
    server: MCPServer[Any] = MCPServer(
        name="memoryd", version=__version__, instructions=INSTRUCTIONS
    )

    @server.tool(
        name="context",
        annotations=_READ_ONLY,
        description="Call once at the start of a task, before anything else: the user's memory "
        "for this agent, in Markdown: how the user works, this agent's skills (and a routine's "
        "with `routine`), the summaries of the most active people, companies and projects, and "
        "today's and yesterday's notes, cut to `budget` tokens. Its last line names what was "
        "left out; fetch that with `search` or `get_entity`.",
    )
    def context(routine: str | None = None, budget: int = DEFAULT_BUDGET) -> ContextResult:
        bundle = agent_context(
            settings, env, agent=agent, routine=routine, budget=max(200, min(budget, 50_000))
        )
        log.info("mcp.context", agent=agent, tokens=bundle.tokens, reads=bundle.reads.queued)
        return ContextResult(
            text=bundle.text,
            tokens=bundle.tokens,
            cut=bundle.cut,
            left_out=bundle.left_out,
            reads=Reads.of(bundle.reads),
        )

    @server.tool(
        name="search",
        annotations=_READ_ONLY,
        description="Call before answering from assumption about a person, company, project, "
        "decision or past event, and when `context` left something out: full-text search of "
        "the memory, recent and often-used first. `kinds`: any of fact, summary, note, skill, "
        "tacit (default all). Ask in words or a plain question (its first 1,000 characters and 64 "
        "words are searched). One hit per fact, each with its "
        "fact id, entity ref (for `get_entity`) and name, date, tier, file and line; "
        "superseded or retracted facts are found and marked.",
    )
    def search(query: str, limit: int = 10, kinds: list[Kind] | None = None) -> SearchResult:
        deadline = env.clock() + SEARCH_TIME_LIMIT
        try:
            found = find(
                settings,
                env,
                query,
                agent=agent,
                limit=max(1, min(limit, 50)),
                kinds=kinds or (),
                stop=lambda: env.clock() > deadline,
            )
        except SearchStopped as error:
            log.warning("mcp.search_stopped", agent=agent, reason=str(error))
            raise ToolError(
                "the search took too long and was stopped; ask a shorter question"
            ) from error
        log.info(
            "mcp.search",
            agent=agent,
            hits=len(found.hits),
            reads=found.reads.queued,
            query_cut=found.query_cut,
        )
        return SearchResult(
            hits=[SearchHit.model_validate(hit.to_json()) for hit in found.hits],
            reads=Reads.of(found.reads),
            query_cut=found.query_cut,
        )

    @server.tool(
        name="get_entity",
        annotations=_READ_ONLY,
        description="Call when the task involves one person, company, project, area or "
        "resource and you need all that is known: its summary and every fact (id, text, "
        "status, tier), by ref such as people/jane-doe (from `search` or `context`), or by "
        "name.",
    )
    def get_entity(ref: str) -> EntityResult:
        try:
            view = entity_view(settings, env, ref, agent=agent)
        except MemorydError as error:
            raise ToolError(f"{error} Call `search` to find the entity's ref.") from error
        return EntityResult(
            ref=view.ref,
            name=view.name,
            kind=view.kind,
            status=view.status,
            path=view.path,
            summary=view.summary,
            facts=[EntityFact.model_validate(fact) for fact in view.facts],
            reads=Reads.of(view.reads),
        )

    @server.tool(
        name="remember",
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False),
        description="Call when the user states something worth keeping beyond this task (a "
        "fact about a person, company or project, a decision, a preference): with `entity` "
        "(its name) and `kind` (person, company, project, area or resource) it becomes a fact "
        "of that entity; without, a note of the day. Filed by the next heartbeat, not at once. "
        f"At most {MAX_TEXT_CHARS} characters of text, {MAX_NAME_CHARS} of entity name, "
        f"{MAX_PER_DAY} memories a day; filed as your words, not the user's.",
    )
    def remember(text: str, entity: str | None = None, kind: str | None = None) -> RememberResult:
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
            raise ToolError(f"not queued: {error}") from error
        log.info("mcp.remembered", agent=agent, path=str(path))
        return RememberResult(queued=True, filed_by="the next heartbeat")

    return server


def serve(config: LoadedConfig, environ: Mapping[str, str], *, agent: str) -> None:
    """Serve MCP over stdin/stdout until the client closes it."""
    env = Environment.live(environ)
    log.info("mcp.started", agent=agent, store=str(config.settings.store.path))
    build_server(config.settings, env, agent=agent).run("stdio")
    log.info("mcp.stopped", agent=agent)
