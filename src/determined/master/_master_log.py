"""The master's own log, kept in memory for ``det master logs`` (``GET /master/logs``).

:func:`install` (called by ``python -m determined.master``) routes ``logging`` records
and every line the master writes to stdout/stderr into :data:`MASTER_LOG`, a bounded
buffer of numbered lines; the original streams still get everything. The terminal's
lines read ``12:04:31 INFO lifecycle: ...`` (``common.log_format``); the buffer keeps
each line's time and level apart from its text (``lifecycle: ...``), and ``det master
logs`` prints them as the terminal does.
"""

from __future__ import annotations

import collections
import datetime
import logging
import sys
import threading
from typing import Any, Deque, Dict, List, Optional, TextIO

__all__ = ["MASTER_LOG", "MasterLog", "install"]


class MasterLog:
    """The newest ``capacity`` lines, each ``{"id", "timestamp", "level", "line"}``;
    ids increase by one per line, so a client follows the log with ``after_id``."""

    def __init__(self, capacity: int = 10000):
        self._lines: Deque[Dict[str, Any]] = collections.deque(maxlen=capacity)
        self._lock = threading.Lock()
        self._next_id = 1

    def add(self, line: str, level: str = "INFO") -> None:
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        with self._lock:
            self._lines.append({"id": self._next_id, "timestamp": now, "level": level,
                                "line": line})
            self._next_id += 1

    def read(self, after_id: int = 0, limit: int = 1000,
             tail: Optional[int] = None) -> List[Dict[str, Any]]:
        """Lines with ``id > after_id``: the oldest ``limit``, or the newest ``tail``."""
        with self._lock:
            lines = [line for line in self._lines if line["id"] > after_id]
        if tail is not None:
            return lines[-tail:] if tail else []
        return lines[:limit]


class _Handler(logging.Handler):
    def __init__(self, log: MasterLog):
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            for line in self.format(record).splitlines() or [""]:
                self.log.add(line, record.levelname)
        except Exception:  # a log handler never raises
            self.handleError(record)


class _Tee:
    """A text stream writing through to ``stream`` and adding whole lines to ``log``;
    everything else (``buffer``, ``encoding``, ...) is the stream's own."""

    def __init__(self, stream: TextIO, log: MasterLog, level: str):
        self._stream, self._log, self._level = stream, log, level
        self._partial = ""
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        self._stream.write(text)
        with self._lock:
            self._partial += text
            *lines, self._partial = self._partial.split("\n")
        for line in lines:
            self._log.add(line, self._level)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()


#: The running master's log.
MASTER_LOG = MasterLog()
_installed = False


def install(log: MasterLog = MASTER_LOG) -> None:
    """Capture ``logging`` (level INFO and up) and stdout/stderr lines into ``log``."""
    global _installed
    if _installed:
        return
    _installed = True
    from determined.common.log_format import configure_logging

    # The terminal too (not through the tee); before the buffer's handler, as it does
    # nothing where the root logger has a handler.
    configure_logging(sys.stderr, named=True)
    handler = _Handler(log)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    sys.stdout = _Tee(sys.stdout, log, "INFO")  # type: ignore[assignment]
    sys.stderr = _Tee(sys.stderr, log, "ERROR")  # type: ignore[assignment]
