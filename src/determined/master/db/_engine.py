"""Engines for the two backends, and the Alembic migration runner.

SQLite (the embedded default) gets WAL journaling, ``synchronous=NORMAL``, foreign
keys and a busy timeout on every connection, and two engines: readers run deferred
transactions (WAL readers never block), writers run ``BEGIN IMMEDIATE`` so that a
write never fails half-way on a lock upgrade. Writes inside one process are
serialized by the store's lock, so the busy timeout only matters across processes.
PostgreSQL gets one pooled engine for both.
"""

import contextlib
import os
import pathlib
import threading
from typing import Any, ContextManager, Optional, Tuple

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from determined.master.db._errors import StoreError

__all__ = [
    "MIGRATIONS_DIR", "Engines", "alembic_config", "create_engines", "run_downgrade",
    "run_upgrade",
]

MIGRATIONS_DIR = pathlib.Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# Any constant: serializes concurrent upgrades of one PostgreSQL database.
_PG_MIGRATION_LOCK_KEY = 0x6465745F6462  # "det_db"
# Another constant: held by every transaction of the group-commit writer (see order_commits).
_PG_COMMIT_ORDER_LOCK_KEY = 0x6465745F746C  # "det_tl"


class Engines:
    """The engines of one store: ``read`` and ``write`` (the same object on PostgreSQL)."""

    def __init__(self, read: Engine, write: Engine, backend: str):
        self.read = read
        self.write = write
        self.backend = backend
        # One writer at a time in this process on SQLite; PostgreSQL locks rows itself.
        self.write_lock: ContextManager[Any] = (
            threading.Lock() if backend == "sqlite" else contextlib.nullcontext()
        )

    def order_commits(self, conn: sa.Connection) -> None:
        """Make ``conn``'s transaction, just begun, the only writer of the tail tables
        (metrics, trial and task logs) until it ends, in every process.

        Followers read "the rows after id X", so a row must never become visible after
        one with a larger id. PostgreSQL takes the id from a sequence at insert time:
        two writers overlapping would commit out of id order. A transaction-level
        advisory lock taken before the first insert makes them take turns; it is
        released after the commit is visible. SQLite's ``BEGIN IMMEDIATE`` already
        holds the database's write lock from the start.
        """
        if self.backend == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_PG_COMMIT_ORDER_LOCK_KEY,))

    def dispose(self) -> None:
        self.read.dispose()
        if self.write is not self.read:
            self.write.dispose()


def _set_wal(cursor: Any) -> None:
    """Switch to WAL. Several first connections racing to switch can get SQLITE_BUSY
    without the busy handler being consulted, so retry for a while."""
    import sqlite3
    import time

    for attempt in range(200):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise
            time.sleep(0.01 * (1 + attempt % 10))
    cursor.execute("PRAGMA journal_mode=WAL")


@contextlib.contextmanager
def _file_lock(path: Optional[str]) -> Any:
    """An inter-process lock beside a SQLite file (migrations run one at a time)."""
    if not path:
        yield
        return
    import fcntl

    with open(path + ".migrate-lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _private_file(path: str) -> None:
    """Create ``path`` readable by its owner only (0600), or make it so; SQLite gives its
    -wal and -shm files the database file's mode."""
    if not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    try:
        os.chmod(path, 0o600)
    except PermissionError:  # another user's file: leave its mode to its owner
        pass


def _sqlite_engine(url: sa.URL, begin: str, pool_size: int, max_overflow: int) -> Engine:
    engine = sa.create_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=60,
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, emit BEGIN (see _on_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        _set_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql(begin)

    return engine


def create_engines(url: str) -> Engines:
    """Engines for ``sqlite:///path`` or ``postgresql+psycopg://...`` URLs."""
    try:
        parsed = make_url(url)
    except sa.exc.ArgumentError as exc:
        raise ValueError(f"Expected a database URL. Received: url={url!r}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            raise ValueError(
                "Expected a SQLite database file (sqlite:///path/to/master.db): an in-memory "
                f"database cannot be shared by the store's connections. Received: url={url!r}"
            )
        pathlib.Path(database).parent.mkdir(parents=True, exist_ok=True)
        _private_file(database)
        read = _sqlite_engine(parsed, "BEGIN", pool_size=8, max_overflow=56)
        write = _sqlite_engine(parsed, "BEGIN IMMEDIATE", pool_size=2, max_overflow=2)
        return Engines(read, write, "sqlite")
    if backend == "postgresql":
        try:
            engine = sa.create_engine(
                parsed, pool_size=8, max_overflow=32, pool_timeout=60, pool_pre_ping=True
            )
        except ModuleNotFoundError as exc:
            raise StoreError(
                f"The PostgreSQL driver is not installed ({exc}); "
                "install it with: pip install 'psycopg[binary]'"
            ) from exc
        return Engines(engine, engine, "postgresql")
    raise ValueError(
        "Expected a sqlite:///... or postgresql+psycopg://... URL. "
        f"Received: url={parsed.render_as_string(hide_password=True)!r}"
    )


def alembic_config(connection: Optional[sa.Connection] = None) -> Any:
    """An Alembic ``Config`` for the shipped migrations; no alembic.ini is needed.

    ``env.py`` runs on ``connection`` when given (how the store uses it).
    """
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = connection
    return cfg


def run_upgrade(engines: Engines, revision: str = "head") -> Tuple[Optional[str], Optional[str]]:
    """Migrate the database to ``revision`` in one transaction; idempotent.

    Returns:
        The revisions before and after.
    """
    return _migrate(engines, "upgrade", revision)


def run_downgrade(engines: Engines, revision: str) -> Tuple[Optional[str], Optional[str]]:
    """Migrate the database back to ``revision`` (e.g. ``"0016"``) in one transaction,
    as :func:`run_upgrade` does forward (for tests and by hand: the master never does).

    Returns:
        The revisions before and after.
    """
    return _migrate(engines, "downgrade", revision)


def _migrate(engines: Engines, direction: str,
             revision: str) -> Tuple[Optional[str], Optional[str]]:
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    sqlite = engines.backend == "sqlite"
    lock_path = engines.write.url.database if sqlite else None
    with _file_lock(lock_path), engines.write_lock, engines.write.connect() as conn:
        raw = conn.connection.driver_connection
        if sqlite:
            # SQLite's recipe for schema changes: with foreign keys on, the table copies
            # of Alembic's batch mode would cascade deletes. The pragma is a no-op inside
            # a transaction, so it goes first; integrity is checked before the commit.
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with conn.begin():
                if not sqlite:
                    conn.execute(
                        sa.text("SELECT pg_advisory_xact_lock(:key)"),
                        {"key": _PG_MIGRATION_LOCK_KEY},
                    )
                before = MigrationContext.configure(conn).get_current_revision()
                getattr(command, direction)(alembic_config(conn), revision)
                after = MigrationContext.configure(conn).get_current_revision()
                if sqlite:
                    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise StoreError(f"Migration to {after} broke foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                raw.execute("PRAGMA foreign_keys=ON")
    return before, after


def current_revision(engines: Engines) -> Optional[str]:
    from alembic.runtime.migration import MigrationContext

    with engines.read.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
