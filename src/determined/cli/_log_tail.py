"""Reading a log the master stores (a trial's, a task's) page by page, and following it.

One follow loop for ``det trial logs -f``, ``det <task> logs -f``, ``det cmd run`` and
``det e create --follow``: new lines are read after the last id seen, so each stored line
is printed exactly once. The end (a terminal state) is no end of the log: the master and
the agents may store a trial's or task's last lines just after its state changed, so
after the end the tail reads on until no line came for ``DRAIN_QUIET_SECONDS``.
"""

import time
from typing import Any, Callable, Dict, List

__all__ = ["DRAIN_LIMIT_SECONDS", "DRAIN_QUIET_SECONDS", "LogTail", "follow_log"]

PAGE = 1000
#: After the end: stop once this long passed without a new line...
DRAIN_QUIET_SECONDS = 1.0
#: ...or, at the latest, this long after the end was seen.
DRAIN_LIMIT_SECONDS = 30.0

Line = Dict[str, Any]


class LogTail:
    """The lines of one log after ``after`` (an id); ``read(after_id)`` returns one page
    (up to :data:`PAGE` lines) and ``emit`` gets each new line once."""

    def __init__(self, read: Callable[[int], List[Line]], emit: Callable[[Line], None],
                 after: int = 0):
        self._read = read
        self._emit = emit
        self.after = after

    def take(self, lines: List[Line]) -> None:
        """Emit lines read elsewhere (a first page read with other parameters)."""
        for line in lines:
            self._emit(line)
            self.after = line["id"]

    def read_new(self) -> int:
        """Emit every line stored now after the last one seen; returns how many."""
        count = 0
        while True:
            page = self._read(self.after)
            self.take(page)
            count += len(page)
            if len(page) < PAGE:
                return count

    def drain(self, interval: float = 0.25) -> None:
        """After the end: read on until no line came for a quiet period (bounded)."""
        start = quiet_since = time.monotonic()
        while True:
            if self.read_new():
                quiet_since = time.monotonic()
            now = time.monotonic()
            if now - quiet_since >= DRAIN_QUIET_SECONDS or now - start >= DRAIN_LIMIT_SECONDS:
                return
            time.sleep(interval)


def follow_log(tail: LogTail, ended: Callable[[], bool], interval: float = 0.5) -> None:
    """Emit new lines until ``ended()`` is true, then drain what comes after the end."""
    while True:
        tail.read_new()
        if ended():
            tail.drain()
            return
        time.sleep(interval)
