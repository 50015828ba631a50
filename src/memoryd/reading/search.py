"""`memoryd search`: a full-text index of the store (SQLite FTS5, BM25) ranked with recency decay.

What is indexed, one entry each, with the store-relative path and the 1-based line it is on:

- every fact of every `items.json` (`fact`), found by its text and its entity's names: id,
  entity ref, status (active, superseded or retracted facts are all found; the status is
  shown), `lastAccessed` and `accessCount`;
- every content line of each `summary.md` (`summary`), daily note (`note`), skills file of
  any agent (`skill`: topic files, skills indexes, routine files) and of the tacit file
  (`tacit`); headings, blank lines and memoryd's own template sentences are not entries.

A query is read as a question (`memoryd.reading._query`): stop words dropped, words stemmed, CJK
words as character pairs, at most `MAX_TERMS` words; any word may match and covering more of them
scores more. One hit per fact: a summary line citing facts is folded into their hits. Each hit
carries its entity's name and its date (a fact's, a note's day). A reader (`reader`) is shown
the shared entries and its own: another agent's skills and timeline lines are left out unless
`[reading] share_between_agents` (docs/agents.md, What an agent reads).

Ranking: SQLite's BM25 (`bm25()`, smaller is better) times the coverage factor times a recency
weight (`memoryd.reading.hits`): an active fact weighs by its tier today (hot 1.0, warm 0.85,
cold 0.7, docs/store-format.md, Decay and summaries), a note by the tier its date would have (the
days since it, no accesses), a summary, skill or tacit line as warm, and a superseded or
retracted fact 0.5. So at equal match hot beats warm beats cold, and a current fact beats the
one it replaced. Ties go by kind, then id, so the order is stable.

The index is a cache in its own database file beside the state database (`search.sqlite`), never
the truth: deleting it only costs a rebuild. A reader that can keep it nowhere builds it in
memory for the one query (`SearchIndex.open(None, ...)`). It is brought up to date
incrementally — per file, by size, modification time and inode, only the files that changed are
read again, so a commit's few changed files cost a few parses — by the heartbeat after each
commit (from the paths its commits changed: no look at the other files, so the cost follows the
commit, not the store) and by every search before it queries (every file: current even when the
store was edited by hand or pulled).
Several readers may refresh at once; SQLite serializes them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final

from memoryd.errors import CorruptFileError, MemorydError
from memoryd.logs import get_logger
from memoryd.reading._entries import (
    NOTE_NAME,
    Entry,
    indexable,
    parse_file,
    stamp,
    stamp_of,
    walk,
)
from memoryd.reading._query import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    any_of,
    cjk_grams,
    coverage_factor,
    question_terms,
    read_query,
)
from memoryd.reading._search_db import connect
from memoryd.reading.files import ReadOnlyStore
from memoryd.reading.hits import WEIGHTS, Hit, hit_of
from memoryd.store.catalog import entity_at
from memoryd.store.entities import ARCHIVES, ITEMS_FILE, LIFE, SUMMARY_FILE, Entity
from memoryd.store.notes import NOTES_DIR
from memoryd.store.tiers import TierRule

log = get_logger(__name__)
__all__ = [
    "INDEX_FILE_NAME",
    "KINDS",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "Hit",
    "RefreshStats",
    "SearchIndex",
    "SearchStopped",
    "read_query",
]

INDEX_FILE_NAME: Final = "search.sqlite"
KINDS: Final = ("fact", "summary", "note", "skill", "tacit")
_CANDIDATES: Final = 200  # BM25's best this many are re-ranked with recency
_COLUMNS: Final = (
    "e.kind, e.id, e.ref, e.path, e.line, e.text, e.status, e.last_used, e.uses, e.entity, "
    "e.day, e.cites"
)


class SearchStopped(MemorydError):
    """A search ended by its `stop` (its client gone, its time limit)."""


@dataclass(frozen=True)
class RefreshStats:
    files_read: int
    files_dropped: int


class SearchIndex:
    """The search index of one store, in `<state dir>/search.sqlite`."""

    def __init__(self, connection: sqlite3.Connection, store: ReadOnlyStore) -> None:
        self._db = connection
        self._store = store

    @classmethod
    @contextlib.contextmanager
    def open(cls, folder: Path | None, store_root: Path) -> Iterator[SearchIndex]:
        """Open (creating, or rebuilding when it is unreadable) the index of `store_root` in
        `folder` (made with the umask's permissions when missing), or in memory (None). Raise
        OSError or sqlite3.OperationalError when the folder or its file cannot be used."""
        path = None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / INDEX_FILE_NAME
        connection = connect(path)
        try:
            yield cls(connection, ReadOnlyStore(store_root))
        finally:
            connection.close()

    # -- keeping it current ----------------------------------------------------------------

    def refresh(
        self, *, tacit_file: str, skills_dir: str, paths: Iterable[str] | None = None
    ) -> RefreshStats:
        """Read again every indexed file whose size or modification time changed, add new ones,
        drop gone ones. One transaction: a concurrent search sees the old or the new state.

        `paths` (store-relative: what a commit just changed) limits the refresh to those files,
        so that its cost follows the commit, not the store (an index still empty is built
        whole); a search refreshes everything before it queries, so edits made by hand and
        pulls are seen then."""
        scope = None if paths is None or self._empty() else indexable(paths, tacit_file, skills_dir)
        if scope is None:
            on_disk = self._scan(tacit_file, skills_dir)
        else:
            root = str(self._store.root)
            on_disk = {
                path: found
                for path, base in scope.items()
                if (found := stamp_of(root, path, base)) is not None
            }
        with self._transaction():
            query = "SELECT path, mtime_ns, size, inode FROM files"
            rows = (
                self._db.execute(query).fetchall()
                if scope is None
                else [
                    row
                    for path in scope
                    for row in self._db.execute(f"{query} WHERE path = ?", (path,))
                ]
            )
            known = {path: (mtime, size, inode) for path, mtime, size, inode in rows}
            gone = sorted(set(known) - set(on_disk))
            changed = sorted(path for path, stamp in on_disk.items() if known.get(path) != stamp)
            for path in gone:
                self._drop(path)
                self._db.execute("DELETE FROM files WHERE path = ?", (path,))
            refs = self._refs([path for path in changed if path.startswith(f"{LIFE}/")])
            for path in changed:
                self._drop(path)
                for entry in self._entries(path, refs, tacit_file, skills_dir):
                    self._insert(entry)
                self._db.execute(
                    "INSERT OR REPLACE INTO files(path, mtime_ns, size, inode) VALUES (?, ?, ?, ?)",
                    (path, *on_disk[path]),
                )
        if changed or gone:
            log.info("search.refreshed", files_read=len(changed), files_dropped=len(gone))
        return RefreshStats(len(changed), len(gone))

    def _empty(self) -> bool:
        return self._db.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _scan(self, tacit_file: str, skills_dir: str) -> dict[str, tuple[int, int, int]]:
        """Every indexable file of the store with its (mtime_ns, size, inode): a store write
        is an atomic rename, so a rewritten file has a new inode even within one clock tick.
        One `scandir` pass and one `lstat` per indexed file; symbolic links are not followed."""
        root = str(self._store.root)
        found: dict[str, tuple[int, int, int]] = {}
        entity_files = (ITEMS_FILE, SUMMARY_FILE)
        for relative, entry in walk(root, LIFE):
            if entry.name in entity_files:
                found[relative] = stamp(entry)
        for relative, entry in walk(root, NOTES_DIR, recursive=False):
            if NOTE_NAME.match(entry.name):
                found[relative] = stamp(entry)
        for relative, entry in walk(root, skills_dir):
            if entry.name.endswith(".md") and entry.name != "README.md":
                found[relative] = stamp(entry)
        try:
            info = os.lstat(os.path.join(root, tacit_file))
        except OSError:
            pass
        else:
            found[tacit_file] = (info.st_mtime_ns, info.st_size, info.st_ino)
        return found

    def _refs(self, paths: Sequence[str]) -> dict[str, tuple[str, str, str]]:
        """Store path of each entity file among `paths` -> its entity's ref and names (one
        `entity.json` read per entity, not the whole catalogue)."""
        refs: dict[str, tuple[str, str, str]] = {}
        entities: dict[str, Entity | None] = {}
        for path in paths:
            folder = path.rsplit("/", 1)[0]
            if folder not in entities:
                try:
                    entities[folder] = entity_at(self._store, folder)
                except CorruptFileError as error:
                    log.warning("search.entity_unreadable", folder=folder, reason=error.reason)
                    entities[folder] = None
            entity = entities[folder]
            if entity is not None:
                refs[path] = (entity.ref, " ".join(entity.names), entity.name)
        return refs

    def _entries(
        self, path: str, refs: dict[str, tuple[str, str, str]], tacit_file: str, skills_dir: str
    ) -> list[Entry]:
        try:
            text = self._store.read_text(path)
        except CorruptFileError as error:
            log.warning("search.file_skipped", path=path, reason=error.reason)
            return []
        return (
            []
            if text is None
            else parse_file(path, text, refs, tacit_file, self._store.root, skills_dir=skills_dir)
        )

    def _drop(self, path: str) -> None:
        rows = self._db.execute("SELECT rowid, terms FROM entries WHERE path = ?", (path,))
        for rowid, terms in rows.fetchall():
            self._db.execute(
                "INSERT INTO docs(docs, rowid, terms) VALUES ('delete', ?, ?)", (rowid, terms)
            )
        self._db.execute("DELETE FROM entries WHERE path = ?", (path,))

    def _insert(self, entry: Entry) -> None:
        terms = f"{entry.text} {entry.about} {cjk_grams(entry.text)}".strip()
        cursor = self._db.execute(
            "INSERT INTO entries(path, kind, id, ref, line, status, last_used, uses, text, terms, "
            "entity, day, cites, agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.path,
                entry.kind,
                entry.id,
                entry.ref,
                entry.line,
                entry.status,
                entry.last_used.isoformat() if entry.last_used else None,
                entry.uses,
                entry.text,
                terms,
                entry.entity,
                entry.day.isoformat() if entry.day else None,
                " ".join(entry.cites),
                entry.agent,
            ),
        )
        self._db.execute("INSERT INTO docs(rowid, terms) VALUES (?, ?)", (cursor.lastrowid, terms))

    # -- querying --------------------------------------------------------------------------

    def hottest_entities(self, *, today: date, rule: TierRule, limit: int) -> list[str]:
        """The folders of the active (not archived) entities with hot or warm facts: most hot
        facts first, then most warm ones, then by folder (what `context` loads). One pass over
        a covering index of the active facts; the tier limits are computed once per access
        count (`TierRule.limits`, docs/store-format.md, Decay and summaries)."""
        counts: dict[str, list[int]] = {}
        limits: dict[int, tuple[int, int]] = {}
        rows = self._db.execute(
            "SELECT path, last_used, uses FROM entries WHERE kind = 'fact' AND status = 'active'"
        )
        archived = f"{LIFE}/{ARCHIVES}/"
        for path, last_used, uses in rows:
            if last_used is None or path.startswith(archived):
                continue
            hot_limit, warm_limit = limits.get(uses) or limits.setdefault(uses, rule.limits(uses))
            age = (today - date.fromisoformat(last_used)).days
            if age <= warm_limit:
                tally = counts.setdefault(path, [0, 0])
                tally[0 if age <= hot_limit else 1] += 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
        return [path.rsplit("/", 1)[0] for path, _ in ranked[:limit]]

    def search(
        self,
        query: str,
        *,
        today: date,
        rule: TierRule,
        limit: int = 10,
        kinds: Sequence[str] = (),
        reader: str | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> list[Hit]:
        """The best `limit` entries for `query` (module docstring), best first, one hit per
        fact: a summary line citing facts is folded into their hits. `reader`: the agent that
        asks (None: every entry, the operator); `stop`: polled while SQLite works, true ends
        the search with SearchStopped (a client gone, a time limit)."""
        terms = question_terms(query)
        if not terms:
            return []
        if stop is not None:
            if stop():
                raise SearchStopped("search stopped before it started")
            self._db.set_progress_handler(lambda: int(stop()), 200)
        try:
            rows = self._candidates(any_of(terms), kinds, reader)
            matched = self._coverage(terms, [row[0] for row in rows])
        except sqlite3.OperationalError as error:
            if stop is not None and stop():
                raise SearchStopped(f"search stopped: {error}") from error
            raise
        finally:
            self._db.set_progress_handler(None, 0)
        hits: dict[tuple[str, str], Hit] = {}
        fold = not kinds or "fact" in kinds
        for rowid, *fields, bm25 in rows:
            score = -bm25 * coverage_factor(matched.get(rowid, 0), len(terms))
            hit = hit_of(fields, score, today, rule)
            cited = self._cited(hit, score, today, rule) if fold and fields[-1] else []
            for found in cited or [hit]:
                key = (found.kind, found.id)
                if key not in hits or hits[key].score < found.score:
                    hits[key] = found
        ranked = sorted(hits.values(), key=lambda hit: (-hit.score, KINDS.index(hit.kind), hit.id))
        return ranked[:limit]

    def _candidates(
        self, match: str, kinds: Sequence[str], reader: str | None
    ) -> list[tuple[Any, ...]]:
        sql = f"SELECT e.rowid, {_COLUMNS}, bm25(docs) FROM docs JOIN entries e "  # noqa: S608
        sql += "ON e.rowid = docs.rowid WHERE docs MATCH ?"
        parameters: list[object] = [match]
        if reader is not None:
            sql += " AND (e.agent IS NULL OR e.agent = ?)"
            parameters.append(reader)
        if kinds:
            sql += f" AND e.kind IN ({', '.join('?' for _ in kinds)})"
            parameters += list(kinds)
        sql += " ORDER BY bm25(docs) LIMIT ?"
        parameters.append(_CANDIDATES)
        return self._db.execute(sql, parameters).fetchall()

    def _coverage(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, int]:
        """How many of `terms` each of the entries `rowids` contains (as the index stems them)."""
        counts: dict[int, int] = {}
        if len(terms) < 2 or not rowids:
            return dict.fromkeys(rowids, len(terms))
        among = f"rowid IN ({', '.join('?' for _ in rowids)})"
        for term in terms:
            sql = f"SELECT rowid FROM docs WHERE docs MATCH ? AND {among}"  # noqa: S608
            for (rowid,) in self._db.execute(sql, (any_of([term]), *rowids)):
                counts[rowid] = counts.get(rowid, 0) + 1
        return counts

    def _cited(self, line: Hit, score: float, today: date, rule: TierRule) -> list[Hit]:
        """The hits of the facts a summary line cites, each scored as the line was (at the
        fact's own tier); [] when none of them is in the index (the line stays a hit)."""
        cites = self._db.execute(
            "SELECT cites FROM entries WHERE path = ? AND line = ? AND kind = 'summary'",
            (line.path, line.line),
        ).fetchone()
        ids = str(cites[0]).split() if cites else []
        found = []
        for fields in self._db.execute(
            f"SELECT {_COLUMNS} FROM entries e WHERE e.kind = 'fact' AND e.id IN "  # noqa: S608
            f"({', '.join('?' for _ in ids)})",
            ids,
        ):
            fact = hit_of(list(fields), 1.0, today, rule)
            weight = WEIGHTS[fact.tier] / WEIGHTS[line.tier]
            found.append(dataclasses.replace(fact, score=score * weight))
        return found
