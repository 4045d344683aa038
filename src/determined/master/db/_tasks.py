"""Tasks (commands, notebooks, shells, TensorBoards): their rows and their log lines.

Tables ``tasks`` and ``task_logs`` (migration 0005). A task's id is a short random
string (as upstream's), its ``config`` the validated task config, ``context`` the
uploaded context directory (a tar.gz, or NULL).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from typing import Any, Dict, List, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy import orm

from determined.master.db._base import StoreBase
from determined.master.db._checks import check_str
from determined.master.db._errors import NotFoundError
from determined.master.db._logs import insert_log_rows, log_rows, read_log_lines
from determined.master.db._models import Base, LogLineColumns
from determined.master.db._records import LogLine
from determined.master.db._types import JSONText, UTCDateTime, utcnow
from determined.master.db._writer import Handler

__all__ = ["TASK_STATES", "TaskRecord", "TasksMixin", "TaskLogRow", "TaskRow"]

#: PENDING (waiting for slots) -> RUNNING -> TERMINATED.
TASK_STATES = ("PENDING", "RUNNING", "TERMINATED")

_TASK_LOGS = "task_logs"  # the group-commit writer's job kind


class TaskRow(Base):
    __tablename__ = "tasks"

    id: orm.Mapped[str] = orm.mapped_column(sa.String(64), primary_key=True)
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    owner: orm.Mapped[str] = orm.mapped_column(sa.String(255), index=True)
    state: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    description: orm.Mapped[str] = orm.mapped_column(sa.Text, default="")
    config: orm.Mapped[Any] = orm.mapped_column(JSONText)
    context: orm.Mapped[Optional[bytes]] = orm.mapped_column(sa.LargeBinary)
    agent_id: orm.Mapped[Optional[str]] = orm.mapped_column(sa.String(255))
    slot_ids: orm.Mapped[Any] = orm.mapped_column(JSONText, nullable=True)
    exit_code: orm.Mapped[Optional[int]] = orm.mapped_column(sa.Integer)
    end_reason: orm.Mapped[Optional[str]] = orm.mapped_column(sa.Text)
    start_time: orm.Mapped[datetime.datetime] = orm.mapped_column(UTCDateTime)
    end_time: orm.Mapped[Optional[datetime.datetime]] = orm.mapped_column(UTCDateTime)


class TaskLogRow(LogLineColumns, Base):
    __tablename__ = "task_logs"
    __table_args__ = (sa.Index(None, "task_id", "id"),)

    task_id: orm.Mapped[str] = orm.mapped_column(
        sa.ForeignKey("tasks.id", ondelete="CASCADE")
    )


@dataclasses.dataclass(frozen=True)
class TaskRecord:
    """One task as stored (without its context archive)."""

    id: str
    kind: str
    owner: str
    state: str
    description: str
    config: Dict[str, Any]
    agent_id: Optional[str]
    slot_ids: Optional[List[int]]
    exit_code: Optional[int]
    end_reason: Optional[str]
    start_time: datetime.datetime
    end_time: Optional[datetime.datetime]


def _record(row: TaskRow) -> TaskRecord:
    return TaskRecord(row.id, row.kind, row.owner, row.state, row.description, row.config,
                      row.agent_id, row.slot_ids, row.exit_code, row.end_reason,
                      row.start_time, row.end_time)


class TasksMixin(StoreBase):
    def create_task(self, id: str, kind: str, owner: str, config: Dict[str, Any],
                    context: Optional[bytes], description: str = "") -> TaskRecord:
        """Store a new PENDING task."""
        with self._write() as s:
            row = TaskRow(id=id, kind=kind, owner=owner, state="PENDING",
                          description=description, config=config, context=context,
                          start_time=utcnow())
            s.add(row)
            self._flush_or_conflict(s, f"task {id!r} exists")
            return _record(row)

    def get_task(self, id: str) -> TaskRecord:
        with self._read() as s:
            return _record(self._get(s, TaskRow, id, "task"))

    def get_task_context(self, id: str) -> Optional[bytes]:
        with self._read() as s:
            return self._get(s, TaskRow, id, "task").context

    def list_tasks(self, owner: Optional[str] = None, kind: Optional[str] = None,
                   active_only: bool = False) -> List[TaskRecord]:
        query = sa.select(TaskRow).order_by(TaskRow.start_time)
        if owner is not None:
            query = query.where(TaskRow.owner == owner)
        if kind is not None:
            query = query.where(TaskRow.kind == kind)
        if active_only:
            query = query.where(TaskRow.state != "TERMINATED")
        with self._read() as s:
            return [_record(r) for r in s.scalars(query)]

    def update_task(self, id: str, **changes: Any) -> TaskRecord:
        """Set ``state``, ``agent_id``, ``slot_ids``, ``exit_code``, ``end_reason``;
        TERMINATED sets ``end_time``. A TERMINATED task stays so."""
        if "state" in changes and changes["state"] not in TASK_STATES:
            raise ValueError(f"Expected state to be one of {', '.join(TASK_STATES)}. "
                             f"Received: state={changes['state']!r}")
        with self._write() as s:
            row = self._get(s, TaskRow, id, "task", lock=True)
            if row.state == "TERMINATED":
                return _record(row)
            for key, value in changes.items():
                setattr(row, key, value)
            if changes.get("state") == "TERMINATED":
                row.end_time = utcnow()
            return _record(row)

    def add_task_logs(self, task_id: str, lines: Sequence[str]) -> int:
        """Append log lines of a task (group-committed, as trial logs are, so that a
        follower sees them in id order); returns how many.

        Raises:
            NotFoundError: there is no task ``task_id``.
        """
        rows = log_rows("task_id", check_str("task_id", task_id), lines)
        if not rows:
            return 0
        return int(self._submit(_TASK_LOGS, rows))

    def get_task_logs(self, task_id: str, after_id: int = 0, limit: int = 1000,
                      tail: Optional[int] = None) -> List[LogLine]:
        """Log lines with ``id > after_id``, oldest first (``tail``: the newest N)."""
        with self._read() as s:
            return read_log_lines(s, TaskLogRow.__table__.c.task_id, task_id, after_id, limit,
                                  tail)

    # -- group-commit handler (runs on the writer thread) -----------------------------

    def _writer_handlers(self) -> Dict[str, Handler]:
        return {**super()._writer_handlers(),
                _TASK_LOGS: functools.partial(insert_log_rows, TaskLogRow.__table__)}

    def _explain_write_error(
        self, conn: sa.Connection, kind: str, rows: List[Any], exc: Exception
    ) -> Exception:
        if kind == _TASK_LOGS:
            task_id = rows[0]["task_id"]
            if conn.scalar(sa.select(TaskRow.id).where(TaskRow.id == task_id)) is None:
                return NotFoundError("task", task_id)
        return super()._explain_write_error(conn, kind, rows, exc)
