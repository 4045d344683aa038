"""One page of a log table (``trial_logs``, ``task_logs``): the lines after a given id,
from the oldest or the newest."""

from typing import Any, List, Optional

import sqlalchemy as sa
from sqlalchemy import orm

from determined.master.db._checks import check_int
from determined.master.db._records import LogLine

__all__ = ["read_log_lines"]


def read_log_lines(session: orm.Session, owner: sa.Column, owner_id: Any, after_id: int = 0,
                   limit: int = 1000, tail: Optional[int] = None) -> List[LogLine]:
    """The lines of the log ``owner == owner_id`` with ``id > after_id``, oldest first.

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
