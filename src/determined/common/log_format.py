"""How the processes that serve a cluster, other than the master, write their log lines:
``12:04:31 INFO message``. One format for all of them: an agent's own log, a trial's
processes and ranks (``determined.harness._rank_logs``), and a shell, TensorBoard or
notebook task's process (``determined.tasks``).

The time is the local time to the second, without the date: these lines are read in a
terminal (``det t logs``, ``det shell logs``, an agent's console), often 80 columns
wide, where the date would take 11 of them on every line, and whoever reads them knows
the day (the master stores each task line it receives with its full time). The master's
own log (``det master logs``) is kept apart, as its records carry their time.

    >>> import logging
    >>> logging.Formatter(LOG_FORMAT, LOG_TIME_FORMAT).format(logging.makeLogRecord(
    ...     {"msg": "listening", "levelname": "INFO", "created": 0}))[8:]
    ' INFO listening'
"""

from __future__ import annotations

import logging
import sys
from typing import Optional, TextIO

__all__ = ["LOG_FORMAT", "LOG_TIME_FORMAT", "configure_logging"]

#: A line: ``time level message``.
LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"
#: The time of a line: ``12:04:31`` (local time, no date; see the module's docstring).
LOG_TIME_FORMAT = "%H:%M:%S"


class _Below(logging.Filter):
    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


def configure_logging(stream: Optional[TextIO] = None, errors: Optional[TextIO] = None,
                      level: int = logging.INFO) -> None:
    """Log ``level`` and above in :data:`LOG_FORMAT` to ``stream`` (default stderr); with
    ``errors``, warnings and errors go there instead (an agent: its lines on stdout,
    its problems on stderr). HTTP clients' lines about each request are left out. Does
    nothing where the root logger has a handler already."""
    root = logging.getLogger()
    if root.handlers:
        return
    formatter = logging.Formatter(LOG_FORMAT, LOG_TIME_FORMAT)
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
