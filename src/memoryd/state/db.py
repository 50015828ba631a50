"""The connection to the state database: opening, schema migrations and transactions.

Invariants:
- The database runs in WAL mode with foreign keys on and a busy timeout, so the daemon's writer
  and a reader such as `memoryd status` can use it at the same time.
- `PRAGMA user_version` is the schema version; `open` migrates an older database in order, one
  transaction per migration, and refuses a newer one (`StateVersionError`) without touching it.
  `PRAGMA application_id` marks the file as memoryd's, so a stranger's database is refused too.
  After migrating, the pages a migration freed go back to the file system at once.
- Every connection has memoryd's SQL functions (`memoryd_pack_text`, `state/_packing.py`), which
  migrations may use.
- Writes that belong together run inside `with db.transaction():`. Transactions nest: an inner
  one is a savepoint, rolled back alone if its block raises. The outermost one takes the write
  lock up front (`BEGIN IMMEDIATE`), so two writers never deadlock upgrading a read lock.
- Every sqlite3 error leaves this module as a `StateError` (`StateBusyError` when the database
  stayed locked past the busy timeout).
- The file holds cleaned transcript text, so it is created readable by its owner only.

A connection belongs to the thread that opened it (sqlite3's default check): each job opens its
own. The one exception is opened `any_thread` by a caller that serialises its users.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from memoryd.state._packing import register_functions
from memoryd.state.errors import StateBusyError, StateCorruptError, StateError, StateVersionError
from memoryd.state.schema import MIGRATIONS, PAGE_SIZE, Migration

# "memd" in ASCII: marks the SQLite file as a memoryd state database.
APPLICATION_ID = 0x6D656D64
DEFAULT_BUSY_TIMEOUT_MS = 5_000
# STRICT tables need SQLite 3.37.
MINIMUM_SQLITE = (3, 37, 0)

Parameters = Sequence[Any]


def _translate(error: sqlite3.Error, path: Path) -> StateError:
    message = str(error)
    if isinstance(error, sqlite3.OperationalError) and "locked" in message:
        return StateBusyError(f"{path}: the state database stayed locked ({message})")
    if isinstance(error, sqlite3.DatabaseError) and (
        "not a database" in message or "malformed" in message
    ):
        return StateCorruptError(path, message)
    return StateError(f"{path}: {message}")


class StateDB:
    """An open state database. Create it with `StateDB.open`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self._path = path
        self._depth = 0

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        migrations: Sequence[Migration] = MIGRATIONS,
        any_thread: bool = False,
    ) -> StateDB:
        """Open (creating if needed) the database at `path` and migrate it to the newest schema.

        With `any_thread`, the connection may be used from threads other than the opening one
        (one at a time: the caller serialises them, as `memoryd.heartbeat.keeping` does).

        Raise StateVersionError if it was written by a newer memoryd, StateCorruptError if it is
        not a memoryd state database, StateBusyError if another process keeps it locked.
        """
        if sqlite3.sqlite_version_info < MINIMUM_SQLITE:
            raise StateError(
                f"SQLite {sqlite3.sqlite_version} is too old; memoryd needs 3.37 or newer"
            )
        _create_private_file(path)
        with _opening(path):
            try:
                connection = sqlite3.connect(
                    path,
                    isolation_level=None,
                    timeout=busy_timeout_ms / 1000,
                    check_same_thread=not any_thread,
                )
            except sqlite3.Error as error:
                raise _translate(error, path) from error
            connection.row_factory = sqlite3.Row
            register_functions(connection)
            db = cls(connection, path)
            try:
                db._configure(busy_timeout_ms)
                db._migrate(migrations)
            except BaseException:
                connection.close()
                raise
        return db

    @property
    def path(self) -> Path:
        return self._path

    @property
    def schema_version(self) -> int:
        return int(self.scalar("PRAGMA user_version") or 0)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> StateDB:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block as one transaction (a savepoint when nested); roll back if it raises."""
        rollback: tuple[str, ...]
        if self._depth == 0:
            begin, commit, rollback = "BEGIN IMMEDIATE", "COMMIT", ("ROLLBACK",)
        else:
            name = f"nested_{self._depth}"
            begin, commit = f"SAVEPOINT {name}", f"RELEASE {name}"
            # ROLLBACK TO keeps the savepoint open; releasing it afterwards closes it.
            rollback = (f"ROLLBACK TO {name}", f"RELEASE {name}")
        self.execute(begin)
        self._depth += 1
        try:
            yield
            self.execute(commit)
        except BaseException:
            # SQLite may already have rolled back by itself (e.g. on a full disk); a failed
            # COMMIT, though, leaves the transaction open, and it must not leak into the next.
            if self._connection.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    for statement in rollback:
                        self._connection.execute(statement)
            raise
        finally:
            self._depth -= 1

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def execute(self, sql: str, parameters: Parameters = ()) -> sqlite3.Cursor:
        try:
            return self._connection.execute(sql, parameters)
        except sqlite3.Error as error:
            raise _translate(error, self._path) from error

    def execute_many(self, sql: str, rows: Iterable[Parameters]) -> None:
        try:
            self._connection.executemany(sql, rows)
        except sqlite3.Error as error:
            raise _translate(error, self._path) from error

    def query(self, sql: str, parameters: Parameters = ()) -> list[sqlite3.Row]:
        try:
            return self._connection.execute(sql, parameters).fetchall()
        except sqlite3.Error as error:
            raise _translate(error, self._path) from error

    def query_one(self, sql: str, parameters: Parameters = ()) -> sqlite3.Row | None:
        try:
            row: sqlite3.Row | None = self._connection.execute(sql, parameters).fetchone()
        except sqlite3.Error as error:
            raise _translate(error, self._path) from error
        return row

    def reclaim_space(self) -> None:
        """Give the pages freed by deletions back to the file system (a no-op in a database
        made before migration 4 that could not be vacuumed), and fold the write-ahead log
        back into the file, truncating it, unless a reader holds it."""
        if self.in_transaction:
            return  # inside a transaction the freed pages are not free yet
        try:
            # Through sqlite3_exec, which steps the pragma to its end: each step frees a page.
            self._connection.executescript("PRAGMA incremental_vacuum;")
        except sqlite3.Error as error:
            raise _translate(error, self._path) from error
        self.query("PRAGMA wal_checkpoint(TRUNCATE)")

    def compact(self, limit_bytes: int) -> bool:
        """Rewrite the database without the slack of half-empty pages (VACUUM), if it is no
        bigger than `limit_bytes` (the rewrite takes some 10 ms per MB, and as much disk space
        again while it runs) and no transaction is open; return whether it was rewritten. An
        optimisation: when another process keeps the database locked, it is not rewritten."""
        if self.in_transaction:
            return False
        size = int(self.scalar("PRAGMA page_count")) * int(self.scalar("PRAGMA page_size"))
        if size > limit_bytes:
            return False
        try:
            self.execute("VACUUM")
        except StateBusyError:
            return False
        self.query("PRAGMA wal_checkpoint(TRUNCATE)")
        return True

    def scalar(self, sql: str, parameters: Parameters = ()) -> Any:
        row = self.query_one(sql, parameters)
        return None if row is None else row[0]

    def _configure(self, busy_timeout_ms: int) -> None:
        # busy_timeout first: switching to WAL needs a lock another process may hold.
        self.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._check_application_id()
        # Takes effect only in a new, empty file (an older database gets it in migration 6).
        self.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        self._use_wal()
        # FULL: a recorded answer must survive a power loss, or it would be paid for again.
        self.execute("PRAGMA synchronous = FULL")
        self.execute("PRAGMA foreign_keys = ON")

    def _use_wal(self) -> None:
        mode = self.scalar("PRAGMA journal_mode = WAL")
        if str(mode).lower() != "wal":
            raise StateError(f"{self._path}: cannot switch the state database to WAL ({mode})")

    def _run_unlocked(self, migration: Migration) -> None:
        try:
            for statement in migration.unlocked:
                self.execute(statement)
        except StateBusyError:
            if not migration.best_effort:
                raise
            # Another process has the database open; an optional step waits for no one.
        finally:
            if str(self.scalar("PRAGMA journal_mode")).lower() != "wal":
                self._use_wal()

    def _check_application_id(self) -> None:
        # Both reads in one read transaction: another process may be committing the first
        # migration right now, and a snapshot sees its tables and its id together or neither.
        self.execute("BEGIN DEFERRED")
        try:
            found = int(self.scalar("PRAGMA application_id") or 0)
            tables = int(self.scalar("SELECT count(*) FROM sqlite_schema") or 0)
        finally:
            self.execute("COMMIT")
        if found not in (0, APPLICATION_ID):
            raise StateCorruptError(
                self._path, f"application id {found:#x} is not memoryd's {APPLICATION_ID:#x}"
            )
        # The first migration sets the id in its own transaction: a database with tables but
        # without the id was made by something else.
        if found == 0 and tables:
            raise StateCorruptError(self._path, "a SQLite database, but not memoryd's")

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        supported = len(migrations)
        for position, migration in enumerate(migrations, start=1):
            if migration.version != position:
                raise StateError(f"migration #{position} is numbered {migration.version}")
        current = self.schema_version
        migrated = False
        while True:
            if current > supported:
                raise StateVersionError(self._path, current, supported)
            if current == supported:
                break
            self._run_unlocked(migrations[current])
            with self.transaction():
                # Read again under the write lock: another process may have migrated meanwhile.
                current = self.schema_version
                if current < supported:
                    for statement in migrations[current].statements:
                        self.execute(statement)
                    self.execute(f"PRAGMA user_version = {current + 1}")
                    self.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    migrated = True
            current = self.schema_version
        if migrated:
            # A migration that rebuilds a table (5: the packed mention index) leaves the old
            # pages free; give them back now rather than at the next prune.
            self.reclaim_space()


@contextlib.contextmanager
def _opening(path: Path) -> Iterator[None]:
    """Hold `<database>.open-lock` while a connection is configured and migrated.

    Openers take turns for these few milliseconds. Switching a new file to WAL and migrating it
    while other processes do the same made them wait on each other's locks through SQLite's busy
    handler for seconds under load, up to the busy timeout. A lock file that cannot be created
    (a read-only state directory) is done without: SQLite's own locking still keeps it correct.
    """
    try:
        descriptor = os.open(
            path.with_name(path.name + ".open-lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
        )
    except OSError:
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _create_private_file(path: Path) -> None:
    """Create the database file with owner-only permissions if it does not exist yet.

    SQLite would create it with the umask's permissions; it gives the -wal and -shm files the
    database file's own permissions, so creating this one right covers all three.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # the umask's: the group reads the queue
        descriptor = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    except OSError as error:
        raise StateError(f"cannot create the state database {path}: {error}") from error
    os.close(descriptor)
