"""How the processes that serve a cluster write their log lines: ``12:04:31 INFO message``.
One format for all of them: an agent's own log, a trial's processes and ranks
(``determined.harness._rank_logs``), a shell, TensorBoard or notebook task's process
(``determined.tasks``), and the master's own log, whose lines also name their logger
(``12:04:31 INFO lifecycle: experiment 3 ACTIVE``, :data:`NAMED_LOG_FORMAT`).

The time is the local time to the second, without the date: these lines are read in a
terminal (``det t logs``, ``det shell logs``, an agent's console), often 80 columns
wide, where the date would take 11 of them on every line, and whoever reads them knows
the day (the master stores each task line it receives with its full time). The master
keeps its own lines in memory for ``det master logs`` with their time and level apart
(the web UI shows them its own way); the command prints them as :func:`log_line` writes
them, as its terminal shows them.

    >>> import logging
    >>> logging.Formatter(LOG_FORMAT, LOG_TIME_FORMAT).format(logging.makeLogRecord(
    ...     {"msg": "listening", "levelname": "INFO", "created": 0}))[8:]
    ' INFO listening'
"""

from __future__ import annotations

import datetime
import logging
import sys
from typing import Optional, TextIO

__all__ = ["LOG_FORMAT", "LOG_TIME_FORMAT", "NAMED_LOG_FORMAT", "configure_logging",
           "log_line"]

#: A line: ``time level message``.
LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"
#: The master's line: ``time level logger: message`` (``lifecycle: ...`` stands out).
NAMED_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: The time of a line: ``12:04:31`` (local time, no date; see the module's docstring).
LOG_TIME_FORMAT = "%H:%M:%S"


class _Below(logging.Filter):
    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


def log_line(when: datetime.datetime, level: str, text: str) -> str:
    """A line kept apart from its time and level (the master's in-memory log), as
    :data:`LOG_FORMAT` writes it; ``when`` in local time (an aware one is converted).

    Example:
        >>> log_line(datetime.datetime(2026, 1, 2, 12, 4, 31), "INFO", "lifecycle: hi")
        '12:04:31 INFO lifecycle: hi'
    """
    local = when.astimezone() if when.tzinfo is not None else when
    return f"{local.strftime(LOG_TIME_FORMAT)} {level} {text}"


def configure_logging(stream: Optional[TextIO] = None, errors: Optional[TextIO] = None,
                      level: int = logging.INFO, named: bool = False) -> None:
    """Log ``level`` and above in :data:`LOG_FORMAT` (``named``: :data:`NAMED_LOG_FORMAT`)
    to ``stream`` (default stderr); with ``errors``, warnings and errors go there instead
    (an agent: its lines on stdout, its problems on stderr). HTTP clients' lines about
    each request are left out. Does nothing where the root logger has a handler already."""
    root = logging.getLogger()
    if root.handlers:
        return
    formatter = logging.Formatter(NAMED_LOG_FORMAT if named else LOG_FORMAT, LOG_TIME_FORMAT)
    main = logging.StreamHandler(stream if stream is not None else sys.stderr)
    main.setFormatter(formatter)
    root.addHandler(main)
    if errors is not None:
        main.addFilter(_Below(logging.WARNING))
        problems = logging.StreamHandler(errors)
        problems.setFormatter(formatter)
        problems.setLevel(logging.WARNING)
        root.addHandler(problems)
    root.setLevel(level)
    # httpx logs every request at INFO: an agent polling the master would log each poll.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
