"""The log tables (``trial_logs``, ``task_logs``): their rows as the group-commit
writer inserts them, and one page of lines after a given id, from the oldest or the
newest."""

from typing import Any, Dict, List, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy import orm

from determined.master.db._checks import check_int, check_str
from determined.master.db._records import LogLine
from determined.master.db._types import utcnow

__all__ = ["insert_log_rows", "log_rows", "read_log_lines"]


def log_rows(owner_key: str, owner_id: Any, lines: Sequence[str]) -> List[Dict[str, Any]]:
    """The rows of ``lines`` of the log of ``owner_id``, stamped now.

    Raises:
        ValueError: ``lines`` is not a list of str.
    """
    if isinstance(lines, str):
        raise ValueError(f"Expected lines to be a list of str. Received: lines={lines!r}")
    now = utcnow()
    return [{owner_key: owner_id, "timestamp": now, "line": check_str(f"lines[{i}]", line)}
            for i, line in enumerate(lines)]


def insert_log_rows(table: sa.Table, conn: sa.Connection,
                    jobs: List[List[Dict[str, Any]]]) -> List[int]:
    """The group-commit handler of the log ``table`` (bind it with functools.partial):
    every job's rows in one statement; returns how many lines each job stored."""
    conn.execute(sa.insert(table), [row for rows in jobs for row in rows])
    return [len(rows) for rows in jobs]


def read_log_lines(session: orm.Session, owner: sa.Column, owner_id: Any, after_id: int = 0,
                   limit: int = 1000, tail: Optional[int] = None) -> List[LogLine]:
    """The lines of the log ``owner == owner_id`` with ``id > after_id``, oldest first.

    A follower passes the last id it got as ``after_id`` and misses nothing: only the
    group-commit writer inserts log lines, and its transactions make their rows visible
    in id order (``Engines.order_commits``), so no line with a smaller id can appear
    after a larger one was read.

    Args:
        owner: the log table's column naming whose line it is (``trial_logs.trial_id``).
        limit: at most this many, from the oldest (``--head N``).
        tail: if given, the newest ``tail`` lines instead (``--tail N``).

    Raises:
        ValueError: ``after_id``, ``limit`` or ``tail`` is not an int >= 0.

    Example:
        >>> t = TrialLog.__table__  # doctest: +SKIP
        >>> read_log_lines(session, t.c.trial_id, 7, tail=2)  # doctest: +SKIP
        [LogLine(id=41, ...), LogLine(id=42, ...)]
    """
    check_int("after_id", after_id, minimum=0)
    check_int("limit", limit, minimum=0)
    check_int("tail", tail, minimum=0, optional=True)
    t = owner.table
    query = sa.select(t.c.id, t.c.timestamp, t.c.line).where(owner == owner_id, t.c.id > after_id)
    if tail is not None:
        query = query.order_by(t.c.id.desc()).limit(tail)
    else:
        query = query.order_by(t.c.id).limit(limit)
    lines = [LogLine(*row) for row in session.execute(query)]
    return lines[::-1] if tail is not None else lines
