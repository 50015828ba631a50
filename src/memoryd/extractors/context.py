"""What the model is shown besides the transcript, so it can avoid duplicates
(docs/llm-contract.md).

For a chunk: the known entities it names in prose (`memoryd.store.catalog.find_in_prose`), each
with up to a capped number of its active facts (one line each: id and text); the known entities
that only look like a name it writes, each on one line saying it is a different entity; the
tacit lines already filed that share the most words with it; and the agent's skills index. All
are bounded — the fact cap is shared by all entities of the chunk, most recently used facts
first — so the context never grows with the size of the store.
"""

from __future__ import annotations

from memoryd.errors import CorruptFileError
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import ChunkContext
from memoryd.store.catalog import EntityCatalog, Lookalike, find_in_prose
from memoryd.store.entities import Entity
from memoryd.store.facts import FactBook
from memoryd.store.items import Fact
from memoryd.store.tacit import relevant_tacit, tacit_lines
from memoryd.worktree import FileTransaction

SKILLS_INDEX_LIMIT = 4000  # characters of the skills index shown to the model
MAX_ENTITIES = 25
MAX_LOOKALIKES = 5  # look-alike lines, within MAX_ENTITIES (a common first name has many)


def build_context(
    chunk: Chunk,
    *,
    tx: FileTransaction,
    catalog: EntityCatalog,
    facts: FactBook,
    max_facts: int,
    skills_index_path: str,
    tacit_path: str | None = None,
) -> ChunkContext:
    """Given a chunk and the store as the heartbeat sees it, return the bounded context."""
    text = "\n".join(turn.text for turn in chunk.turns)
    finding = find_in_prose(text, catalog.entities())
    entities = finding.mentioned[:MAX_ENTITIES]
    per_entity = [
        sorted(
            _active_facts(facts, entity),
            key=lambda fact: (fact.last_accessed, fact.access_count, fact.id),
            reverse=True,
        )
        for entity in entities
    ]
    # Share the cap round-robin, so one entity with many facts cannot crowd out the others.
    shown: list[list[str]] = [[] for _ in entities]
    budget = max_facts
    depth = 0
    while budget > 0 and any(depth < len(entity_facts) for entity_facts in per_entity):
        for position, entity_facts in enumerate(per_entity):
            if budget > 0 and depth < len(entity_facts):
                fact = entity_facts[depth]
                # A fact true only from after this excerpt is marked, so that an older state of
                # it in the excerpt is reported as such (memoryd files it already superseded).
                later = (
                    f" (true from {fact.timestamp.isoformat()}, after this excerpt)"
                    if fact.timestamp > chunk.day
                    else ""
                )
                shown[position].append(f"  {fact.id}{later}: {fact.fact}")
                budget -= 1
        depth += 1
    blocks = []
    for entity, lines in zip(entities, shown, strict=True):
        aliases = f" (also: {', '.join(entity.aliases)})" if entity.aliases else ""
        header = f"{entity.ref}: {entity.name}, {entity.kind}{aliases}"
        if entity.archived:
            header += f", {entity.status}"
        blocks.append("\n".join([header, *lines]))
    room = min(MAX_LOOKALIKES, MAX_ENTITIES - len(entities))
    blocks.extend(_lookalike_line(lookalike) for lookalike in finding.lookalikes[: max(room, 0)])
    index = tx.read_text(skills_index_path) or ""
    if len(index) > SKILLS_INDEX_LIMIT:
        index = index[:SKILLS_INDEX_LIMIT].rsplit("\n", 1)[0] + "\n(… more topics not shown)"
    tacit = ""
    if tacit_path is not None:
        filed = tacit_lines(tx.read_text(tacit_path) or "")
        tacit = "\n".join(f"- {line}" for line in relevant_tacit(filed, text))
    return ChunkContext(known_entities="\n".join(blocks), skills_index=index.strip(), tacit=tacit)


def _lookalike_line(lookalike: Lookalike) -> str:
    """A known entity the excerpt does not name, although a name in it looks like its own."""
    entity = lookalike.entity
    kind = "person" if entity.kind == "person" else "entity"
    return (
        f"{entity.ref}: {entity.name}, {entity.kind} — not the same {kind} as "
        f"'{lookalike.seen}' in this excerpt, unless the excerpt says so"
    )


def _active_facts(facts: FactBook, entity: Entity) -> list[Fact]:
    """The entity's active facts; none when its items.json cannot be read (it is reported where
    a fact is filed into it, and never overwritten)."""
    try:
        return facts.file_for(entity).active()
    except CorruptFileError:
        return []
