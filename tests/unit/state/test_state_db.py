"""Opening, migrating, refusing and transacting on the state database file."""

from __future__ import annotations

import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from memoryd.errors import MemorydError, TransientError
from memoryd.state import (
    State,
    StateBusyError,
    StateCorruptError,
    StateDB,
    StateError,
    StateVersionError,
)
from memoryd.state.db import APPLICATION_ID
from memoryd.state.schema import MIGRATIONS, Migration

EXPECTED_TABLES = {
    "meta",
    "cursors",
    "conversation_days",
    "conversation_days_fts",
    "pending_facts",
    "runs",
    "chunks",
    "chunk_failures",
    "usage",
    "entity_rewrites",
    "rewrite_batches",
    "rewrite_batch_requests",
}


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_open_creates_and_migrates_an_empty_database(state_path: Path) -> None:
    with StateDB.open(state_path) as db:
        assert db.schema_version == len(MIGRATIONS)
        tables = {row[0] for row in db.query("SELECT name FROM sqlite_schema WHERE type='table'")}
        assert tables >= EXPECTED_TABLES
        assert db.scalar("PRAGMA journal_mode") == "wal"
        assert db.scalar("PRAGMA foreign_keys") == 1
        assert db.scalar("PRAGMA application_id") == APPLICATION_ID
        assert db.scalar("PRAGMA busy_timeout") == 5000


def test_the_file_is_readable_by_its_owner_only(state_path: Path) -> None:
    StateDB.open(state_path).close()
    assert stat.S_IMODE(state_path.stat().st_mode) == 0o600


def test_reopening_keeps_data_and_version(state_path: Path) -> None:
    with State.open(state_path) as state:
        state.meta.set("k", "v")
    with State.open(state_path) as state:
        assert state.meta.get("k") == "v"
        assert state.db.schema_version == len(MIGRATIONS)


def test_a_newer_database_is_refused_and_left_untouched(state_path: Path) -> None:
    StateDB.open(state_path).close()
    connection = _raw(state_path)
    connection.execute("PRAGMA user_version = 99")
    connection.close()

    with pytest.raises(StateVersionError) as caught:
        StateDB.open(state_path)

    assert caught.value.found == 99
    assert caught.value.supported == len(MIGRATIONS)
    assert "upgrade memoryd" in str(caught.value)
    assert isinstance(caught.value, MemorydError)
    connection = _raw(state_path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 99
    connection.close()


def test_a_file_that_is_not_a_database_is_refused(state_path: Path) -> None:
    state_path.parent.mkdir(parents=True)
    state_path.write_bytes(b"this is not sqlite, it is a text file of sufficient length " * 20)
    with pytest.raises(StateCorruptError):
        StateDB.open(state_path)


def test_a_strangers_database_is_refused(state_path: Path) -> None:
    state_path.parent.mkdir(parents=True)
    connection = _raw(state_path)
    connection.execute("CREATE TABLE invoices (id INTEGER)")
    connection.close()
    with pytest.raises(StateCorruptError, match="not memoryd's"):
        StateDB.open(state_path)


def test_a_later_migration_upgrades_an_older_database_in_order(state_path: Path) -> None:
    with State.open(state_path) as state:
        state.meta.set("kept", "yes")
    later = (
        *MIGRATIONS,
        Migration(len(MIGRATIONS) + 1, "add notes", ("CREATE TABLE notes (body TEXT) STRICT",)),
        Migration(
            len(MIGRATIONS) + 2,
            "seed notes",
            ("INSERT INTO notes (body) VALUES ('seeded after the table existed')",),
        ),
    )
    with StateDB.open(state_path, migrations=later) as db:
        assert db.schema_version == len(MIGRATIONS) + 2
        assert db.scalar("SELECT body FROM notes") == "seeded after the table existed"
        assert db.scalar("SELECT value FROM meta WHERE key = 'kept'") == "yes"
    # The newer database is now refused by the older code.
    with pytest.raises(StateVersionError):
        StateDB.open(state_path)


def test_a_failing_migration_leaves_the_previous_version(state_path: Path) -> None:
    StateDB.open(state_path).close()
    broken = (
        *MIGRATIONS,
        Migration(
            len(MIGRATIONS) + 1,
            "half done",
            ("CREATE TABLE half (x TEXT)", "THIS IS NOT SQL"),
        ),
    )
    with pytest.raises(StateError):
        StateDB.open(state_path, migrations=broken)
    with StateDB.open(state_path) as db:
        assert db.schema_version == len(MIGRATIONS)
        assert db.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'half'") == 0


def test_misnumbered_migrations_are_rejected(state_path: Path) -> None:
    with pytest.raises(StateError, match="numbered"):
        StateDB.open(state_path, migrations=(Migration(2, "skips one", ()),))


def test_a_transaction_is_rolled_back_when_its_block_raises(state: State) -> None:
    with pytest.raises(RuntimeError), state.transaction():
        state.meta.set("a", "1")
        raise RuntimeError("boom")
    assert state.meta.get("a") is None
    assert not state.db.in_transaction


def test_a_nested_transaction_rolls_back_alone(state: State) -> None:
    with state.transaction():
        state.meta.set("outer", "1")
        with pytest.raises(RuntimeError), state.transaction():
            state.meta.set("inner", "1")
            raise RuntimeError("boom")
        state.meta.set("after", "1")
    assert state.meta.get("outer") == "1"
    assert state.meta.get("inner") is None
    assert state.meta.get("after") == "1"


def test_an_outer_rollback_undoes_committed_inner_blocks(state: State) -> None:
    with pytest.raises(RuntimeError), state.transaction():
        with state.transaction():
            state.meta.set("inner", "1")
        raise RuntimeError("boom")
    assert state.meta.get("inner") is None


def test_two_connections_at_once_read_while_the_other_writes(state_path: Path) -> None:
    with State.open(state_path) as writer, State.open(state_path) as reader:
        writer.meta.set("seen", "before")
        with writer.transaction():
            writer.meta.set("seen", "during")
            # WAL: the reader is not blocked and sees the last committed value.
            assert reader.meta.get("seen") == "before"
        assert reader.meta.get("seen") == "during"
        reader.meta.set("from-reader", "ok")
        assert writer.meta.get("from-reader") == "ok"


def test_a_writer_locked_out_past_the_busy_timeout_gets_a_transient_error(
    state_path: Path,
) -> None:
    with State.open(state_path) as holder, State.open(state_path, busy_timeout_ms=50) as other:
        with holder.transaction():
            holder.meta.set("x", "1")
            with pytest.raises(StateBusyError) as caught, other.transaction():
                other.meta.set("x", "2")
        assert isinstance(caught.value, TransientError)
        assert other.meta.get("x") == "1"


def test_processes_opening_a_fresh_database_at_once_migrate_it_once(state_path: Path) -> None:
    barrier = threading.Barrier(4)
    versions: list[int] = []
    errors: list[BaseException] = []

    def open_it() -> None:
        barrier.wait()
        try:
            with StateDB.open(state_path) as db:
                versions.append(db.schema_version)
        except BaseException as error:  # noqa: BLE001 - reported to the test thread below
            errors.append(error)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert versions == [len(MIGRATIONS)] * 4


def test_a_failed_commit_does_not_leave_a_transaction_open(state: State) -> None:
    # A deferred foreign key is only checked at COMMIT, which then fails.
    state.db.execute("PRAGMA defer_foreign_keys = ON")
    with pytest.raises(StateError, match="FOREIGN KEY"), state.transaction():
        state.db.execute(
            "INSERT INTO chunks (chunk_key, state, run_id, plan_json, planned_at)"
            " VALUES ('k', 'planned', 'no-such-run', '{}', 'x')"
        )
    assert not state.db.in_transaction
    with state.transaction():
        state.meta.set("next", "works")
    assert state.meta.get("next") == "works"
    assert state.journal.get("k") is None


def test_a_malformed_database_is_reported_as_corrupt_with_the_remedy(state_path: Path) -> None:
    with State.open(state_path) as state:
        state.meta.set("kept", "until the disk broke")
    connection = sqlite3.connect(state_path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    data = bytearray(state_path.read_bytes())
    data[100:4096] = b"\xa5" * (4096 - 100)  # the schema page, past the file header
    state_path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        state_path.with_name(state_path.name + suffix).unlink(missing_ok=True)

    with pytest.raises(StateCorruptError, match="malformed") as caught:
        State.open(state_path)

    assert "rebuilds the state from the store" in str(caught.value)


def test_an_older_database_is_switched_to_incremental_vacuum_and_shrinks_after_deletes(
    state_path: Path,
) -> None:
    with StateDB.open(state_path, migrations=MIGRATIONS[:3]) as db:
        assert db.scalar("PRAGMA auto_vacuum") == 0  # none, as databases before version 4
        db.execute("CREATE TABLE filler (body TEXT) STRICT")
        db.execute_many("INSERT INTO filler VALUES (?)", [("x" * 4000,)] * 500)
    with StateDB.open(state_path) as db:
        assert db.schema_version == len(MIGRATIONS)
        assert db.scalar("PRAGMA auto_vacuum") == 2  # incremental
        db.reclaim_space()
        full = state_path.stat().st_size
        db.execute("DELETE FROM filler")
        db.reclaim_space()
        assert state_path.stat().st_size < full / 4
        assert state_path.with_name(state_path.name + "-wal").stat().st_size == 0  # folded in
        with db.transaction():
            db.reclaim_space()  # not inside a transaction: nothing is freed yet there


SMALLER_PAGES = next(m.version for m in MIGRATIONS if m.description == "smaller pages")


def _pages(db: StateDB) -> tuple[int, str, int]:
    return (
        int(db.scalar("PRAGMA page_size")),
        str(db.scalar("PRAGMA journal_mode")),
        int(db.scalar("PRAGMA auto_vacuum")),
    )


def _older_database_with_rows(state_path: Path) -> list[tuple[str, str]]:
    rows = [(f"key-{n:04d}", "value " * (n % 300)) for n in range(2000)]
    state_path.parent.mkdir(parents=True)
    made_before = _raw(state_path)  # a file made before version 6: SQLite's default pages
    assert made_before.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    made_before.close()
    with StateDB.open(state_path, migrations=MIGRATIONS[: SMALLER_PAGES - 1]) as db:
        assert _pages(db) == (4096, "wal", 2)  # as databases before version 6
        db.execute_many("INSERT INTO meta (key, value) VALUES (?, ?)", rows)
        db.execute_many("DELETE FROM meta WHERE key = ?", [(k,) for k, _ in rows[::3]])
    return [row for row in rows if row not in rows[::3]]


def test_a_new_database_has_small_pages(state_path: Path) -> None:
    with StateDB.open(state_path) as db:
        assert _pages(db) == (1024, "wal", 2)


def test_an_older_database_gets_small_pages_and_keeps_every_row(state_path: Path) -> None:
    rows = _older_database_with_rows(state_path)
    with StateDB.open(state_path) as db:
        assert db.schema_version == len(MIGRATIONS)
        assert _pages(db) == (1024, "wal", 2)
        assert [tuple(row) for row in db.query("SELECT key, value FROM meta ORDER BY key")] == rows
        assert db.scalar("PRAGMA integrity_check") == "ok"


def test_an_older_database_open_elsewhere_keeps_its_pages_and_is_upgraded(
    state_path: Path,
) -> None:
    rows = _older_database_with_rows(state_path)
    other = _raw(state_path)  # another process reading it, e.g. `memoryd status`
    try:
        assert other.execute("SELECT count(*) FROM meta").fetchone() == (len(rows),)
        with StateDB.open(state_path, busy_timeout_ms=50) as db:
            assert db.schema_version == len(MIGRATIONS)
            assert _pages(db) == (4096, "wal", 2)
            assert db.scalar("SELECT count(*) FROM meta") == len(rows)
    finally:
        other.close()
    with StateDB.open(state_path) as db:  # not tried again: the version is reached
        assert _pages(db) == (4096, "wal", 2)


def test_compacting_is_given_up_while_another_process_writes(state_path: Path) -> None:
    with StateDB.open(state_path, busy_timeout_ms=50) as db:
        db.execute_many(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [(f"k{n}", "v" * 500) for n in range(300)],
        )
        db.execute("DELETE FROM meta WHERE key LIKE 'k1%'")
        other = _raw(state_path)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            assert not db.compact(10**9)
        finally:
            other.execute("ROLLBACK")
            other.close()
        with db.transaction():
            assert not db.compact(10**9)  # never inside a transaction
        assert not db.compact(1000)  # bigger than the limit
        pages = db.scalar("PRAGMA page_count")
        assert db.compact(10**9)
        assert db.scalar("PRAGMA page_count") < pages
        assert db.scalar("SELECT count(*) FROM meta") == 300 - 111
