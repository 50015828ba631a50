"""Applying one validated answer to the store (docs/store-format.md, Creating entities;
docs/store-format.md, Facts; docs/heartbeat.md, step 5).

Everything goes through the heartbeat's transaction, so a later chunk sees (and can supersede)
what an earlier one filed, and nothing reaches the disk before the heartbeat commits.

Entity heuristics: a name the store does not know becomes an entity folder only when the model
marks it as a direct relationship or as significant, or when memoryd's own mention count (one per
conversation and day, over everything read so far) reaches `min_mentions`. Until then its facts
are written to the daily note of their conversation and kept as *pending*; when the entity
qualifies, its pending facts are filed into it. Nothing is lost either way.

The model never chooses a path: names are resolved or slugified by the store; supersession only
touches facts of the same entity; unknown fact ids are ignored and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, time
from pathlib import Path
from typing import Any, ParamSpec, Protocol

from memoryd.errors import PathEscapeError, StoreError
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.contract import EntityIn, FactIn, RecordMemories, TimelineIn
from memoryd.extractors.counters import ApplyCounters as ApplyCounters  # noqa: PLC0414 - re-exported
from memoryd.extractors.gate import HeldTips, Outcome, Tip, file_tip, support
from memoryd.logs import get_logger
from memoryd.store.catalog import EntityCatalog, load_catalog
from memoryd.store.entities import Entity, normalize_name
from memoryd.store.facts import FactBook, FactDraft
from memoryd.store.items import FactSource
from memoryd.store.notes import PendingNote, TimelineEntry, add_pending_facts, add_timeline
from memoryd.store.text import words
from memoryd.worktree import FileTransaction, meets_hostile_entry

log = get_logger(__name__)

P = ParamSpec("P")


@dataclass(frozen=True)
class PendingRecord:
    """A fact about an entity that has not qualified yet."""

    entity_name: str
    kind: str
    key: str  # normalize_name of the name it was reported under
    fact: dict[str, Any]  # the FactIn as JSON
    conversation_date: date
    source: dict[str, Any]
    record_id: int | None = None  # the state database's id, once stored


class PendingFacts(Protocol):
    """The heartbeat's view of pending facts, including this heartbeat's staged changes."""

    def add(self, record: PendingRecord) -> bool:
        """Stage a pending fact; False if the same fact is already pending."""
        ...

    def take(self, keys: Iterable[str], kind: str) -> list[PendingRecord]:
        """Stage the removal of, and return, the pending facts filed under any of `keys`."""
        ...


class MentionCounter(Protocol):
    def count_mentions(self, names: Sequence[str]) -> int: ...


@dataclass
class StoreSession:
    """The store as one heartbeat sees it: its transaction and the views built on it."""

    tx: FileTransaction
    catalog: EntityCatalog
    facts: FactBook
    skills_dir: str
    tacit_file: str
    today: date  # the processing date (recordedAt), in the configured zone
    # The items the gate held so far, logged once each when the heartbeat has filed its chunks.
    held: HeldTips = field(default_factory=HeldTips)

    @classmethod
    def open(
        cls,
        tx: FileTransaction,
        *,
        skills_dir: str,
        tacit_file: str,
        today: date,
        host_code: int | None = None,
        catalog_cache: Path | None = None,
        catalog_head: str | None = None,
        catalog_changes: Callable[[str], Sequence[str] | None] | None = None,
    ) -> StoreSession:
        """`host_code`: this host's fact-id code in a store shared by several hosts;
        `catalog_cache`: where the entity catalogue is cached (`memoryd.store.catalog._cache`);
        `catalog_head`: the commit the entity folders are known to be exactly (its snapshot);
        `catalog_changes`: the store paths changed since a commit (`GitStore.changed_since`)."""
        if catalog_cache is None:
            catalog = EntityCatalog.load(tx)
        else:
            catalog = load_catalog(
                tx, catalog_cache, head=catalog_head, changed_since=catalog_changes
            )
        facts = FactBook(tx, catalog, host_code=host_code)
        return cls(tx, catalog, facts, skills_dir, tacit_file, today)


def apply_answer(
    answer: RecordMemories,
    chunk: Chunk,
    session: StoreSession,
    *,
    pending: PendingFacts,
    mentions: MentionCounter,
    min_mentions: int,
) -> ApplyCounters:
    """File one chunk's answer into the session's transaction and say what changed."""
    counters = ApplyCounters()
    applier = _Applier(
        chunk,
        session,
        pending=pending,
        mentions=mentions,
        min_mentions=min_mentions,
        counters=counters,
    )
    specs = {(normalize_name(e.name), e.kind): e for e in answer.entities}
    # Each item is filed on its own: one the store cannot take (a name with no letter, an
    # entity whose items.json a person broke) is logged and skipped, and never blocks the rest
    # of the answer, nor later heartbeats that would reuse the journalled answer.
    for spec in answer.entities:
        applier.guarded("entity", applier.entity, spec.name, spec.kind, spec)
    for fact in answer.facts:
        fact_spec = specs.get((normalize_name(fact.entity.name), fact.entity.kind))
        applier.guarded("fact", applier.fact, fact, fact_spec)
    # A conversation uses a fact once however often the answer names it (docs/store-format.md,
    # Facts); a conversation read again (`memoryd reprocess`) counted its uses the first time.
    for fact_id in dict.fromkeys(() if chunk.reread else answer.accessed):
        applier.guarded("access", applier.access, fact_id)
    if answer.timeline:
        applier.guarded("timeline", applier.timeline, answer.timeline)
    for skill in answer.skills:
        applier.guarded("skill", applier.skill, skill.topic, skill.tip, routine=skill.routine)
    if answer.tacit:
        applier.guarded("tacit", applier.tacit, answer.tacit)
    return counters


def _time_of(text: str | None) -> time | None:
    return time.fromisoformat(text) if text else None


class _Applier:
    def __init__(
        self,
        chunk: Chunk,
        session: StoreSession,
        *,
        pending: PendingFacts,
        mentions: MentionCounter,
        min_mentions: int,
        counters: ApplyCounters,
    ) -> None:
        self.chunk = chunk
        self.session = session
        self.pending = pending
        self.mentions = mentions
        self.min_mentions = min_mentions
        self.counters = counters
        self.source = FactSource(
            agent=chunk.agent,
            session=chunk.session_id,
            file=chunk.turns[0].provenance.file,
            lines=chunk.line_range,
            locator=chunk.turns[0].provenance.locator,
        )

    def entity(
        self, name: str, kind: str, spec: EntityIn | None, *, lifecycle: bool = True
    ) -> Entity | None:
        """The store entity for a reported name: existing, newly qualified, or None (pending).
        With `lifecycle`, a status the answer reports is applied (moved to or from the
        archives); the facts of an entity leave that to the entity's own item."""
        catalog = self.session.catalog
        entity = catalog.resolve(name, kind)
        aliases = list(spec.aliases) if spec else []
        if entity is None:
            if not self._qualifies(name, aliases, spec):
                return None
            entity = catalog.create(name, kind, aliases, today=self.chunk.day)
            self.counters.entities_created += 1
            self._file_pending(entity)
        elif aliases:
            entity = catalog.add_aliases(entity, aliases)
        if lifecycle and spec is not None and spec.status != entity.status:
            was_archived = entity.archived
            entity = catalog.set_status(entity, spec.status)
            if entity.archived and not was_archived:
                self.counters.entities_archived += 1
            elif was_archived and not entity.archived:
                self.counters.entities_reactivated += 1
        return entity

    def _qualifies(self, name: str, aliases: list[str], spec: EntityIn | None) -> bool:
        if spec is not None and (spec.relationship or spec.significant):
            return True
        return self.mentions.count_mentions([name, *aliases]) >= self.min_mentions

    def _file_pending(self, entity: Entity) -> None:
        keys = {normalize_name(label) for label in entity.names}
        for record in self.pending.take(keys, entity.kind):
            fact = FactIn.model_validate(record.fact)
            source = record.source
            draft = FactDraft(
                fact=fact.fact,
                category=fact.category,
                timestamp=_day(fact.timestamp) or record.conversation_date,
                conversation_date=record.conversation_date,
                source=FactSource(
                    agent=str(source["agent"]),
                    session=str(source["session"]),
                    file=str(source["file"]),
                    lines=(int(source["lines"][0]), int(source["lines"][1])),
                    locator=source.get("locator"),
                ),
                related_entities=self._related_refs(fact),
            )
            outcome = self.session.facts.file_for(entity).add(draft, recorded_at=self.session.today)
            self.counters.pending_filed += 1
            self.counters.facts_added += int(outcome.added)

    def fact(self, fact: FactIn, spec: EntityIn | None) -> None:
        entity = self.entity(fact.entity.name, fact.entity.kind, spec, lifecycle=False)
        if entity is None:
            self._stage_pending(fact)
            return
        draft = FactDraft(
            fact=fact.fact,
            category=fact.category,
            timestamp=_day(fact.timestamp) or self.chunk.day,
            conversation_date=self.chunk.day,
            source=self.source,
            related_entities=self._related_refs(fact),
            supersedes=tuple(fact.supersedes),
        )
        outcome = self.session.facts.file_for(entity).add(draft, recorded_at=self.session.today)
        self.counters.facts_added += int(outcome.added)
        self.counters.facts_superseded += len(outcome.supersession.superseded)
        self.counters.ignored_references += len(outcome.supersession.refused)

    def _stage_pending(self, fact: FactIn) -> None:
        record = PendingRecord(
            entity_name=fact.entity.name,
            kind=fact.entity.kind,
            key=normalize_name(fact.entity.name),
            fact=fact.model_dump(mode="json"),
            conversation_date=self.chunk.day,
            source={
                "agent": self.source.agent,
                "session": self.source.session,
                "file": self.source.file,
                "lines": list(self.source.lines),
                "locator": self.source.locator,
            },
        )
        if self.pending.add(record):
            self.counters.pending_added += 1
            self.counters.notes_added += add_pending_facts(
                self.session.tx,
                self.chunk.day,
                [PendingNote(fact.entity.name, fact.entity.kind, fact.fact)],
            )

    def _related_refs(self, fact: FactIn) -> tuple[str, ...]:
        refs = []
        for related in fact.related:
            entity = self.session.catalog.resolve(related.name, related.kind)
            if entity is not None:
                refs.append(entity.ref)
        return tuple(dict.fromkeys(refs))

    def skill(self, topic: str, tip: str, *, routine: bool) -> None:
        # Through the safety gate (`memoryd.extractors.gate`): filed with its provenance, or
        # held for review.
        as_routine = routine and self.chunk.routine is not None
        outcome = self._gated(
            Tip(
                kind="routine-skill" if as_routine else "skill",
                agent=self.chunk.agent,
                text=tip,
                topic=topic,
                routine=self.chunk.routine if as_routine else None,
            )
        )
        self.counters.skills_added += int(outcome == "filed")

    def timeline(self, entries: Sequence[TimelineIn]) -> None:
        chunk = self.chunk
        fallback_time = chunk.turns[0].timestamp.astimezone(chunk.zone).time().replace(second=0)
        self.counters.notes_added += add_timeline(
            self.session.tx,
            chunk.day,
            [
                TimelineEntry(
                    at=_time_of(entry.time) or fallback_time, agent=chunk.agent, text=entry.text
                )
                for entry in entries
            ],
        )

    def tacit(self, lines: Sequence[str]) -> None:
        for line in lines:
            if words(line):
                outcome = self._gated(Tip(kind="tacit", agent=self.chunk.agent, text=line))
                self.counters.tacit_added += int(outcome == "filed")

    def _gated(self, tip: Tip) -> Outcome:
        session = self.session
        # A held item is counted once a heartbeat, however many chunks propose it.
        held_before = tip.id in session.held
        outcome = file_tip(
            session.tx,
            tip,
            support(self.chunk, " ".join(filter(None, (tip.topic, tip.text)))),
            skills_dir=session.skills_dir,
            tacit_file=session.tacit_file,
            today=session.today.isoformat(),
            held=session.held,
        )
        self.counters.tips_held += int(outcome == "held" and not held_before)
        return outcome

    def access(self, fact_id: str) -> None:
        if self.session.facts.bump(fact_id, self.chunk.day) is None:
            self.counters.ignored_references += 1
        else:
            self.counters.accesses += 1

    def guarded(
        self, what: str, body: Callable[P, object], *args: P.args, **kwargs: P.kwargs
    ) -> None:
        """File one item; a StoreError skips just that item, logged with why. A link or FIFO
        planted in the store is not the item's fault: its error goes up to the heartbeat, which
        sets the entry aside and files the item again."""
        try:
            body(*args, **kwargs)
        except StoreError as error:
            if isinstance(error, PathEscapeError) and meets_hostile_entry(error):
                raise
            self.counters.items_skipped += 1
            log.warning(
                "answer.item_skipped",
                item=what,
                agent=self.chunk.agent,
                session=self.chunk.session_id,
                day=self.chunk.day.isoformat(),
                reason=str(error),
            )


def _day(text: str | None) -> date | None:
    return date.fromisoformat(text) if text else None
