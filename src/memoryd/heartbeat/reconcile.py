"""An answer given for a context the store has changed since, made right by code when it can be.

A call sent ahead of its chunk's turn is shown the store as it was when it left; chunks applied
meanwhile may have filed facts of an entity it names, created an entity it names, or superseded a
fact it meant to replace. Asking again would pay twice for the chunk. Most of these differences
are settled by code instead (`reconcile`):

- a fact the store holds already (the same statement, filed meanwhile) is dropped: a
  restatement changes nothing;
- an entity created meanwhile is the one the answer names: applying resolves names and aliases
  against the catalogue, so nothing is to do;
- a fact the answer supersedes that was superseded meanwhile is replaced by the fact that
  superseded it (the newest of its line, when still active): said later, the answer's fact
  supersedes that one in turn;

and the chunk is asked again (`None`) only when the answer would be wrong:

- when one of its facts says much the same as a fact of the same entity filed since the call
  left (at least half of the content words of the shorter of the two in common, the entity's
  own name left out), which the model, had it been shown that fact, would have superseded or
  left out, unless that fact is the one that replaced what the answer's fact supersedes;
- when the model may have left a line out because its context showed it as standing and it no
  longer stands: a fact the context listed was superseded or retracted since, the answer does
  not supersede it, and the chunk's text says every content word of it (a restatement; a
  different value of the same thing is a fact of the answer, checked above).

What an answer was asked with is kept in the journal as a stamp (`stamp`): the digest of the
context and the ids of the facts it listed, so that the same decision is taken after a crash.
A chunk asked in one request with others before it (`memoryd.heartbeat.sharing`) was shown what
they say: its stamp names their sources (`Stamp.after`), and the facts filed from them do not
count as filed since.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.extractors.chunking import Chunk
from memoryd.extractors.extract import ChunkContext
from memoryd.store.text import normalize_statement, words

if TYPE_CHECKING:
    from memoryd.extractors.apply import StoreSession
    from memoryd.extractors.contract import FactIn, RecordMemories
    from memoryd.store.entities import Entity
    from memoryd.store.items import Fact

# A fact line of the context: two spaces, the fact id, then ':' or its " (true from" note.
_FACT_LINE = re.compile(r"^ {2}([a-z0-9][a-z0-9-]{0,80}-\d{3,})(?::| \()", re.MULTILINE)
# Words too common to tell two statements apart.
_STOP = frozenset(
    (
        *("the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by"),
        *("from", "as", "is", "are", "was", "were", "be", "been", "it", "its", "this", "that"),
        *("has", "have", "had", "not", "no", "but", "into", "over", "per", "via", "now"),
    )
)
OVERLAP = 0.5  # share of the shorter statement's content words that makes two facts the same


# Where a fact was said: agent, session, file and line range (`FactSource`, as applying files it).
Source = tuple[str, str, str, int, int]


@dataclass(frozen=True)
class Stamp:
    """What an answer was asked with: the context's digest and the fact ids it listed, and the
    sources of the chunks the same request showed before it (their facts were seen)."""

    digest: str
    facts: frozenset[str]
    after: frozenset[Source] = frozenset()

    def to_text(self) -> str:
        value: dict[str, object] = {"digest": self.digest, "facts": sorted(self.facts)}
        if self.after:
            value["after"] = sorted(self.after)
        return json.dumps(value, separators=(",", ":"))

    def with_after(self, chunks: list[Chunk]) -> Stamp:
        """This stamp for a chunk asked in one request after `chunks`."""
        return Stamp(self.digest, self.facts, frozenset(source_of(chunk) for chunk in chunks))

    def saw(self, fact: Fact) -> bool:
        """Whether the answer was asked with the fact listed, or with the chunk it came from."""
        if fact.id in self.facts:
            return True
        where = fact.source
        return (where.agent, where.session, where.file, *where.lines) in self.after

    @classmethod
    def from_text(cls, text: str) -> Stamp | None:
        """The stamp written by `to_text`; None for anything else (then nothing is known of
        what the answer saw, and it is asked again when the context differs)."""
        try:
            value = json.loads(text)
            after = frozenset(
                (str(a), str(s), str(f), int(lo), int(hi))
                for a, s, f, lo, hi in value.get("after", [])
            )
            return cls(str(value["digest"]), frozenset(str(f) for f in value["facts"]), after)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def source_of(chunk: Chunk) -> Source:
    """Where the facts applied from the chunk's answer say they come from."""
    lines = chunk.line_range
    return (chunk.agent, chunk.session_id, chunk.turns[0].provenance.file, lines[0], lines[1])


def stamp(context: ChunkContext) -> Stamp:
    """The stamp of a context."""
    digest = hashlib.sha256(
        "\x00".join((context.known_entities, context.skills_index, context.tacit)).encode()
    ).hexdigest()[:32]
    return Stamp(digest, frozenset(_FACT_LINE.findall(context.known_entities)))


@dataclass
class Reconciled:
    """What reconciling changed: facts dropped as restatements, supersessions redirected."""

    answer: RecordMemories
    dropped: int = 0
    redirected: int = 0


def reconcile(
    answer: RecordMemories, asked: Stamp | None, session: StoreSession, excerpt: str
) -> Reconciled | None:
    """The answer made right for the store as it is now, or None when it must be asked again.
    `excerpt` is the chunk's text as the model was sent it."""
    if asked is None or _left_out(answer, asked, session, excerpt):
        return None
    kept: list[FactIn] = []
    result = Reconciled(answer)
    for fact in answer.facts:
        entity = session.catalog.resolve(fact.entity.name, fact.entity.kind)
        if entity is None:
            kept.append(fact)  # no entity yet: its facts cannot have been filed meanwhile
            continue
        from memoryd.errors import CorruptFileError  # noqa: PLC0415 - only on this path

        try:
            book = session.facts.file_for(entity)
        except CorruptFileError:
            kept.append(fact)  # applying reports it
            continue
        active = book.active()
        statement = normalize_statement(fact.fact)
        if any(normalize_statement(other.fact) == statement for other in active):
            result.dropped += 1
            continue
        supersedes = [_newest(book.get, target) for target in fact.supersedes]
        # A fact filed since that replaced one this fact supersedes is the same line of
        # values: this fact, said later, supersedes it in turn (redirected below).
        since = [o for o in active if not asked.saw(o) and o.id not in supersedes]
        if any(_same_thing(fact.fact, other.fact, _own(entity)) for other in since):
            return None
        result.redirected += sum(a != b for a, b in zip(supersedes, fact.supersedes, strict=True))
        kept.append(fact.model_copy(update={"supersedes": list(dict.fromkeys(supersedes))}))
    result.answer = answer.model_copy(update={"facts": kept})
    return result


def _left_out(answer: RecordMemories, asked: Stamp, session: StoreSession, excerpt: str) -> bool:
    """Whether the answer may lack a line the model left out because its context showed it as
    standing, and it no longer stands: a fact the context listed, superseded or retracted since
    by something the model was not shown, which the answer does not supersede itself, and every
    content word of which the excerpt says. Shown the store as it is now, the model would file
    that line again."""
    from memoryd.errors import CorruptFileError  # noqa: PLC0415 - only on this path

    superseded = {target for fact in answer.facts for target in fact.supersedes}
    said = set(words(excerpt))
    for fact_id in sorted(asked.facts - superseded):
        try:
            found = session.facts.lookup_fact(fact_id)
        except CorruptFileError:
            continue  # applying reports it
        if found is None or found[1].status == "active":
            continue
        entity, listed = found
        after = listed.superseded_by and session.facts.lookup_fact(listed.superseded_by)
        if after and asked.saw(after[1]):
            continue  # replaced by a chunk the same request showed before this one
        content = _content(listed.fact, _own(entity))
        if content and content <= said:
            return True
    return False


def _own(entity: Entity) -> set[str]:
    """The words of the entity's name and aliases (every fact of it may say them)."""
    return set(words(entity.name)) | {w for alias in entity.aliases for w in words(alias)}


def _content(text: str, own: set[str]) -> set[str]:
    return {w for w in words(text) if w not in _STOP and w not in own and len(w) > 1}


def _same_thing(new: str, old: str, own: set[str]) -> bool:
    """Whether two statements of one entity say much the same thing."""
    a, b = _content(new, own), _content(old, own)
    if not a or not b:
        return False
    return len(a & b) >= OVERLAP * min(len(a), len(b))


def _newest(get: Callable[[str], Fact | None], fact_id: str) -> str:
    """The fact that stands now for `fact_id`: itself, or the end of its supersession line."""
    seen = {fact_id}
    current = fact_id
    while True:
        fact = get(current)
        if fact is None or fact.status != "superseded" or fact.superseded_by is None:
            return current
        if fact.superseded_by in seen:
            return fact_id
        seen.add(fact.superseded_by)
        current = fact.superseded_by
