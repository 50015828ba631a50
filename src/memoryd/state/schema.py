"""The state database's schema, as an ordered list of migrations.

Migration N takes a database at schema version N-1 to version N; `PRAGMA user_version` holds the
version reached. Migrations are append-only: once released, a migration is never edited, because
databases in the field have already run it. A new table or column is a new migration at the end.
Each migration runs in its own transaction together with the version bump, so a crash leaves the
database at the previous version or the next one, never between.
"""

from __future__ import annotations

from dataclasses import dataclass

# Bytes a database page (SQLite's default is 4096). Every table and index takes at least one
# page, and a row's text spilling over pages leaves part of its last page empty; with 1 KB
# pages both cost a quarter as much, and the database is 10-15% smaller after a backfill.
PAGE_SIZE = 1024


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]
    # Run before the migration's transaction, outside any (VACUUM cannot run inside one); they
    # must be safe to run again, since a crash before the version bump repeats them.
    unlocked: tuple[str, ...] = ()
    # The unlocked statements are an optimisation: if another process keeps the database open
    # (`StateBusyError`), they are given up and the migration is done without them.
    best_effort: bool = False


_CREATE_V1 = (
    # Key/value odds and ends: last heartbeat summary, the day budget.exhausted was logged, ...
    """CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT""",
    # Readers' per-file cursors: opaque JSON owned by the readers.
    """CREATE TABLE cursors (
        agent TEXT NOT NULL,
        source_key TEXT NOT NULL,
        file_path TEXT NOT NULL,
        cursor_json TEXT NOT NULL,
        PRIMARY KEY (agent, source_key, file_path)
    ) STRICT""",
    # The cleaned text of every conversation-day read so far (docs/store-format.md, Creating
    # entities), and its index.
    """CREATE TABLE conversation_days (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        session_id TEXT NOT NULL,
        day TEXT NOT NULL,
        text TEXT NOT NULL,
        UNIQUE (agent, session_id, day)
    ) STRICT""",
    # External-content FTS5: the text lives once, in conversation_days; the triggers below keep
    # the index in step. Diacritics are folded so the index finds a superset of the candidates;
    # the exact whole-word check happens afterwards on the candidates' text.
    """CREATE VIRTUAL TABLE conversation_days_fts USING fts5(
        text,
        content='conversation_days',
        content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER conversation_days_after_insert AFTER INSERT ON conversation_days BEGIN
        INSERT INTO conversation_days_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER conversation_days_after_delete AFTER DELETE ON conversation_days BEGIN
        INSERT INTO conversation_days_fts (conversation_days_fts, rowid, text)
            VALUES ('delete', old.id, old.text);
    END""",
    """CREATE TRIGGER conversation_days_after_update AFTER UPDATE ON conversation_days BEGIN
        INSERT INTO conversation_days_fts (conversation_days_fts, rowid, text)
            VALUES ('delete', old.id, old.text);
        INSERT INTO conversation_days_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    # Facts of entities that have not qualified yet (docs/store-format.md, Creating entities).
    """CREATE TABLE pending_facts (
        id INTEGER PRIMARY KEY,
        entity_name TEXT NOT NULL,
        kind TEXT NOT NULL,
        entity_key TEXT NOT NULL,
        fact_json TEXT NOT NULL,
        fact_digest TEXT NOT NULL,
        conversation_date TEXT NOT NULL,
        source_json TEXT NOT NULL,
        UNIQUE (kind, entity_key, fact_digest)
    ) STRICT""",
    "CREATE INDEX pending_facts_by_key ON pending_facts (entity_key)",
    # Run history of every job.
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        job TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        outcome TEXT,
        commit_sha TEXT,
        counters_json TEXT
    ) STRICT""",
    "CREATE INDEX runs_by_job_and_start ON runs (job, started_at)",
    # The chunk journal (docs/heartbeat.md, step 4): planned -> answered -> applied -> committed.
    """CREATE TABLE chunks (
        chunk_key TEXT PRIMARY KEY,
        state TEXT NOT NULL
            CHECK (state IN ('planned', 'answered', 'applied', 'committed')),
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        plan_json TEXT NOT NULL,
        planned_at TEXT NOT NULL,
        answer_json TEXT,
        usage_json TEXT,
        model TEXT,
        answered_at TEXT,
        writes_json TEXT,
        applied_at TEXT,
        committed_at TEXT,
        commit_sha TEXT
    ) STRICT""",
    "CREATE INDEX chunks_by_state ON chunks (state)",
    # Failures per chunk, counted once per heartbeat; quarantine at a threshold.
    """CREATE TABLE chunk_failures (
        chunk_key TEXT PRIMARY KEY,
        failures INTEGER NOT NULL,
        last_error TEXT NOT NULL,
        last_run_id TEXT NOT NULL,
        last_failed_at TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        quarantined_at TEXT,
        requeued_at TEXT
    ) STRICT""",
    # The usage ledger: one row per LLM call.
    """CREATE TABLE usage (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL,
        cache_read_tokens INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        job TEXT NOT NULL,
        batch INTEGER NOT NULL CHECK (batch IN (0, 1)),
        run_id TEXT
    ) STRICT""",
    "CREATE INDEX usage_by_time ON usage (at)",
    # Rewrite tracking: per entity, and the one pending Message Batch.
    """CREATE TABLE entity_rewrites (
        ref TEXT PRIMARY KEY,
        rewritten_at TEXT NOT NULL,
        digest TEXT NOT NULL,
        next_tier_change TEXT
    ) STRICT""",
    "CREATE INDEX entity_rewrites_by_next_change ON entity_rewrites (next_tier_change)",
    """CREATE TABLE rewrite_batches (
        batch_id TEXT PRIMARY KEY,
        submitted_at TEXT NOT NULL
    ) STRICT""",
    """CREATE TABLE rewrite_batch_requests (
        batch_id TEXT NOT NULL REFERENCES rewrite_batches (batch_id) ON DELETE CASCADE,
        custom_id TEXT NOT NULL,
        ref TEXT NOT NULL,
        PRIMARY KEY (batch_id, custom_id)
    ) STRICT""",
)

# Version 2: a chunk row no longer keeps the list of its heartbeat's planned writes. Recovery reads
# them from the heartbeat's commit intent; the copy on every chunk row was never read, and was
# most of the database (the whole write list of a heartbeat, once per chunk).
_DROP_CHUNK_WRITES = ("ALTER TABLE chunks DROP COLUMN writes_json",)

# Version 3: the rewrite's answer journal. Each validated summary answer is kept, with the digest
# of what was asked, from the moment it is received (in the transaction that charges it) until
# its summary is committed, so a rewrite killed mid-way never pays for it again.
_CREATE_REWRITE_ANSWERS = (
    """CREATE TABLE rewrite_answers (
        ref TEXT PRIMARY KEY,
        asked_digest TEXT NOT NULL,
        body TEXT NOT NULL,
        run_id TEXT NOT NULL,
        answered_at TEXT NOT NULL
    ) STRICT""",
)

# Version 4: space freed by pruning goes back to the file system. With auto_vacuum INCREMENTAL
# (set once, with a VACUUM, which also gives back what earlier prunes left free), each prune is
# followed by `PRAGMA incremental_vacuum` (`StateDB.reclaim_space`), so the database shrinks
# after the journal's 14-day prune instead of keeping its largest size for ever.
_INCREMENTAL_VACUUM = ("PRAGMA auto_vacuum = INCREMENTAL", "VACUUM")

# Version 5: the mention index packed (docs/store-format.md, Creating entities keeps every
# conversation-day's text for good,
# so it is most of a long-lived database). Each row's text is stored zstd-compressed (`packed`,
# see `state/_packing.py`; the SQL function `memoryd_pack_text` is registered on every
# connection), and the FTS5 index becomes contentless with `detail=none` and no column sizes: it
# keeps only which rows hold which token, all the superset filter needs. A row is packed fast
# when its text changes, and packed again tighter once its day is past (`settled`, done a share
# at a time by the heartbeat: `MentionIndex.settle`). With no content table
# to read from, `state/mentions.py` now writes the index itself (the old text for FTS5's
# 'delete', then the new), so the triggers go. Existing rows are packed and indexed again here;
# the pages of the old table and index are free afterwards, and `StateDB.open` hands them back.
_PACK_CONVERSATION_DAYS = (
    "DROP TRIGGER conversation_days_after_insert",
    "DROP TRIGGER conversation_days_after_delete",
    "DROP TRIGGER conversation_days_after_update",
    "DROP TABLE conversation_days_fts",
    "ALTER TABLE conversation_days RENAME TO conversation_days_plain",
    """CREATE TABLE conversation_days (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        session_id TEXT NOT NULL,
        day TEXT NOT NULL,
        packed BLOB NOT NULL,
        settled INTEGER NOT NULL DEFAULT 0 CHECK (settled IN (0, 1)),
        UNIQUE (agent, session_id, day)
    ) STRICT""",
    # The few rows still packed for speed, which the heartbeat packs again tighter.
    "CREATE INDEX conversation_days_unsettled ON conversation_days (day) WHERE settled = 0",
    """INSERT INTO conversation_days (id, agent, session_id, day, packed)
        SELECT id, agent, session_id, day, memoryd_pack_text(text) FROM conversation_days_plain""",
    """CREATE VIRTUAL TABLE conversation_days_fts USING fts5(
        text,
        content='',
        detail=none,
        columnsize=0,
        tokenize='unicode61 remove_diacritics 2'
    )""",
    """INSERT INTO conversation_days_fts (rowid, text)
        SELECT id, text FROM conversation_days_plain""",
    "DROP TABLE conversation_days_plain",
)

# Version 6: 1 KB pages instead of SQLite's 4 KB (PAGE_SIZE; a new database gets them when it is
# created, `state/db.py`). Each of the 40 tables and indexes takes at least a page, and packed
# texts and cursors spilling over pages leave part of their last page empty: smaller pages waste
# a quarter as much. The page size of a database in WAL mode cannot change, so the database is
# switched out of WAL for the VACUUM that rewrites it, and back. That needs the database to
# itself: when another process has it open, the database keeps its pages (`best_effort`).
_SMALLER_PAGES = (
    "PRAGMA journal_mode = DELETE",
    f"PRAGMA page_size = {PAGE_SIZE}",
    "VACUUM",
    "PRAGMA journal_mode = WAL",
)

# Version 7: past conversation-days bundled. Once an agent has a megabyte or more of settled
# days' text, its days are packed together, a megabyte at a time, instead of each on its own
# (`state/_bundles.py`): some 15-20% smaller, since a day packed alone spells out again the
# words its agent uses every day. A bundled day's row keeps where its text lies in its bundle,
# and an empty `packed`. Nothing to convert: the heartbeat bundles settled days as it settles.
_BUNDLE_CONVERSATION_DAYS = (
    """CREATE TABLE conversation_day_bundles (
        id INTEGER PRIMARY KEY,
        packed BLOB NOT NULL
    ) STRICT""",
    "ALTER TABLE conversation_days ADD COLUMN bundle INTEGER"
    " REFERENCES conversation_day_bundles (id)",
    "ALTER TABLE conversation_days ADD COLUMN bundle_start INTEGER",
    "ALTER TABLE conversation_days ADD COLUMN bundle_end INTEGER",
    "CREATE INDEX conversation_days_by_bundle ON conversation_days (bundle)"
    " WHERE bundle IS NOT NULL",
)

# Version 8: a chunk's usage kept as an array of its four token counts instead of an object
# naming them (`state/journal.py`): 12-20 bytes instead of about a hundred, on every chunk row
# of the journal's last 14 days.
_COMPACT_CHUNK_USAGE = (
    """UPDATE chunks SET usage_json = json_array(
            json_extract(usage_json, '$.input_tokens'),
            json_extract(usage_json, '$.output_tokens'),
            json_extract(usage_json, '$.cache_creation_input_tokens'),
            json_extract(usage_json, '$.cache_read_input_tokens'))
        WHERE json_type(usage_json) = 'object'""",
)

# Version 9: what each journalled answer was asked with (`state/journal.py`): a stamp of the
# context the model was shown (its digest and the fact ids it listed). Answers are journalled the
# moment they arrive, before their chunk's turn; at the turn, or after a crash, the stamp tells
# whether the answer still holds for the store's context or must be reconciled with what was
# filed meanwhile (`memoryd.heartbeat.reconcile`). NULL for answers journalled before: applied
# as they are.
_CHUNK_ASKED_WITH = ("ALTER TABLE chunks ADD COLUMN asked_with TEXT",)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _CREATE_V1),
    Migration(2, "drop the chunk journal's planned writes", _DROP_CHUNK_WRITES),
    Migration(3, "journal the rewrite's summary answers", _CREATE_REWRITE_ANSWERS),
    Migration(4, "give space freed by pruning back", (), unlocked=_INCREMENTAL_VACUUM),
    Migration(5, "pack the mention index", _PACK_CONVERSATION_DAYS),
    Migration(6, "smaller pages", (), unlocked=_SMALLER_PAGES, best_effort=True),
    Migration(7, "bundle past conversation-days", _BUNDLE_CONVERSATION_DAYS),
    Migration(8, "compact chunk usage", _COMPACT_CHUNK_USAGE),
    Migration(9, "journal what each answer was asked with", _CHUNK_ASKED_WITH),
)
