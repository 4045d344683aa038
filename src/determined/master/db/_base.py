"""The store's plumbing: engines, a session per call, the group-commit writer.

The entity methods live in mixins (``_experiments.py``, ``_trials.py``, ...) that all
derive from :class:`StoreBase`; :class:`determined.master.db.Store` combines them.
"""

import contextlib
import datetime
import threading
from typing import Any, Dict, Iterator, List, Optional, Type, TypeVar

import sqlalchemy as sa
from sqlalchemy import orm

from determined.master.db import _engine, _states
from determined.master.db._errors import ConflictError, NotFoundError, StoreError
from determined.master.db._types import utcnow
from determined.master.db._writer import GroupCommitWriter, Handler

__all__ = ["StoreBase"]

M = TypeVar("M")


class StoreBase:
    """Opens the engines; gives mixins ``_read()``, ``_write()`` and ``_submit()``."""

    def __init__(self, url: str):
        if not isinstance(url, str):
            raise ValueError(f"Expected url to be a str. Received: url={url!r}")
        self._engines = _engine.create_engines(url)
        #: The URL given, and ``"sqlite"`` or ``"postgresql"``.
        self.url = url
        self.backend: str = self._engines.backend
        self._closed = False
        self._close_lock = threading.Lock()
        self._writer = GroupCommitWriter(
            self._engines, self._writer_handlers(), self._explain_write_error
        )

    # -- lifecycle -------------------------------------------------------------------

    def upgrade(self) -> Optional[str]:
        """Run the migrations up to the newest revision; a no-op when already there.

        Safe to call at every master start, also by several processes at once.

        Returns:
            The schema revision now in force.
        """
        self._check_open()
        return _engine.run_upgrade(self._engines)[1]

    def schema_revision(self) -> Optional[str]:
        """The migration revision of the database, or None before :meth:`upgrade`."""
        self._check_open()
        return _engine.current_revision(self._engines)

    def close(self) -> None:
        """Finish queued writes, then close every connection. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._writer.close()
        self._engines.dispose()

    def __enter__(self) -> "StoreBase":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- plumbing for the mixins ---------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("The store is closed")

    @contextlib.contextmanager
    def _read(self) -> Iterator[orm.Session]:
        """A session for one read-only call (no lock; WAL readers never wait)."""
        self._check_open()
        with orm.Session(self._engines.read, expire_on_commit=False) as session:
            with session.begin():
                yield session

    @contextlib.contextmanager
    def _write(self) -> Iterator[orm.Session]:
        """A session whose transaction commits when the block ends without error."""
        self._check_open()
        with self._engines.write_lock:
            with orm.Session(self._engines.write, expire_on_commit=False) as session:
                with session.begin():
                    yield session

    def _submit(self, kind: str, rows: List[Any]) -> Any:
        """Hand rows to the group-commit writer; returns once they are committed."""
        self._check_open()
        return self._writer.submit(kind, rows)

    def _insert(self, table: sa.Table) -> Any:
        """A dialect ``INSERT`` that supports ``on_conflict_do_*``."""
        if self.backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        return insert(table)

    @staticmethod
    def _get(session: orm.Session, model: Type[M], key: Any, entity: str, lock: bool = False) -> M:
        """The row with primary key ``key`` or NotFoundError; ``lock`` takes a row lock."""
        obj = session.get(model, key, with_for_update={"of": model} if lock else None)
        if obj is None:
            raise NotFoundError(entity, key)
        return obj

    @staticmethod
    def _move_to_state(entity: str, row: Any, state: str,
                       end_time: Optional[datetime.datetime] = None) -> None:
        """Set the state of an experiment's or a trial's ``row`` (a legal change, see
        ``_states.check_transition``); entering a terminal state sets ``end_time``, now
        unless given."""
        if _states.check_transition(entity, row.id, row.state, state):
            row.state = state
            if state in _states.TERMINAL_STATES:
                row.end_time = end_time or utcnow()

    @staticmethod
    def _flush_or_conflict(session: orm.Session, message: str) -> None:
        """Flush; a unique key taken meanwhile by another writer becomes ConflictError."""
        try:
            session.flush()
        except sa.exc.IntegrityError as exc:
            raise ConflictError(message) from exc

    # Overridden by the mixin that owns the high-rate tables.
    def _writer_handlers(self) -> Dict[str, Handler]:
        return {}

    def _explain_write_error(
        self, conn: sa.Connection, kind: str, rows: List[Any], exc: Exception
    ) -> Exception:
        return StoreError(f"Could not store {kind} rows: {exc}")
