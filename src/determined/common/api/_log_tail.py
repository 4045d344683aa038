"""Reading a log the master stores (a trial's, a task's) page by page, and following it.

One follow loop for ``det trial logs -f``, ``det <task> logs -f``, ``det cmd run``,
``det e create --follow`` and upstream's ``determined_common.api.follow_experiment_logs``
(:func:`follow_experiment`): new lines are read after the last id seen, page after page
until caught up, so each stored line is printed exactly once and in order. The end (a
terminal state) is no end of the log: the master stores a trial's end line just after
its state changed, and a process it kills may still write. A page says ``complete``
once the log has every line it will ever have (the master checks before it reads the
page): the tail stops at the first short page that says so. A master that does not say
(no ``complete`` in its pages) is read on, after the end, until no line came for
``DRAIN_QUIET_SECONDS``.
"""

import time
from typing import Any, Callable, Dict, List, Optional

__all__ = ["DRAIN_LIMIT_SECONDS", "DRAIN_QUIET_SECONDS", "TERMINAL", "LogTail",
           "follow_experiment", "follow_log", "trial_log_page"]

PAGE = 1000
#: After the end, from a master whose pages do not say ``complete``: stop once this
#: long passed without a new line...
DRAIN_QUIET_SECONDS = 1.0
#: ...or, at the latest (whatever the master says), this long after the end was seen.
DRAIN_LIMIT_SECONDS = 30.0

#: The states an experiment ends in.
TERMINAL = ("COMPLETED", "CANCELED", "ERROR")

Line = Dict[str, Any]
#: A page as the master answers it: ``{"logs": [line, ...], "complete": bool}``.
Page = Dict[str, Any]


class LogTail:
    """The lines of one log after ``after`` (an id); ``read(after_id)`` returns one page
    (up to :data:`PAGE` lines) and ``emit`` gets each new line once.

    ``complete`` is what the last page read said: True once every line is read (the
    log is complete and that page was the last), False while more may come, None when
    the master does not say."""

    def __init__(self, read: Callable[[int], Page], emit: Callable[[Line], None],
                 after: int = 0):
        self._read = read
        self._emit = emit
        self.after = after
        self.complete: Optional[bool] = None

    def take(self, lines: List[Line], complete: Optional[bool] = None) -> None:
        """Emit lines read elsewhere (a first page read with other parameters);
        ``complete``: whether they end the log (the page's ``complete``, where it held
        the newest lines), if known."""
        for line in lines:
            self._emit(line)
            self.after = line["id"]
        if complete is not None:
            self.complete = complete

    def take_newest(self, lines: List[Line], n: int, complete: Optional[bool] = None) -> None:
        """Emit the last ``n`` of ``lines`` (the log's newest, read with ``tail`` at
        least 1) and go on after the last of them: ``--tail 0 -f`` prints only lines
        that come later, as ``tail -n 0 -f`` does."""
        self.take(lines[len(lines) - n:] if n else [], complete)
        if lines:
            self.after = max(self.after, lines[-1]["id"])

    def read_new(self) -> int:
        """Emit every line stored now after the last one seen; returns how many."""
        count = 0
        while True:
            page = self._read(self.after)
            lines = page["logs"]
            count += len(lines)
            if len(lines) < PAGE:
                # A full page's flag says nothing of the lines after it: only the last
                # (short) page's says whether anything is left.
                self.take(lines, page.get("complete"))
                return count
            self.take(lines)

    def drain(self, interval: float = 0.25) -> None:
        """After the end: read on until the log is complete -- or, where the master
        does not say, until no line came for a quiet period -- bounded."""
        start = quiet_since = time.monotonic()
        while not self.complete:
            if self.read_new():
                quiet_since = time.monotonic()
            if self.complete:
                return
            now = time.monotonic()
            quiet = self.complete is None and now - quiet_since >= DRAIN_QUIET_SECONDS
            if quiet or now - start >= DRAIN_LIMIT_SECONDS:
                return
            time.sleep(interval)


def follow_log(tail: LogTail, ended: Callable[[], bool], interval: float = 0.5) -> None:
    """Emit new lines until the log is complete, or ``ended()`` is true, then drain
    what comes after the end."""
    while not tail.complete:
        tail.read_new()
        if tail.complete:
            return
        if ended():
            tail.drain()
            return
        time.sleep(interval)


def trial_log_page(client: Any, trial_id: int, after: int) -> Page:
    """One page of the trial's log after the id ``after``, as the master answers it."""
    return client.request("GET", f"/trials/{trial_id}/logs",
                          params={"after_id": after, "limit": PAGE})


def follow_experiment(get_experiment: Callable[[], Dict[str, Any]],
                      read_page: Callable[[int, int], Page], emit: Callable[[Line], None],
                      on_update: Callable[[Dict[str, Any]], None] = lambda exp: None,
                      interval: float = 1.0, logs: bool = True) -> Dict[str, Any]:
    """Emit the log lines of an experiment's first trial (the lowest id) until the
    experiment ended and that log is read to its end; returns the experiment's last
    JSON (its ``state`` one of :data:`TERMINAL`).

    Args:
        get_experiment: the experiment's JSON (``state``, ``trials`` with their ``id``).
        read_page: one page of a trial's log: ``read_page(trial_id, after_id)``.
        emit: called once per line, in order.
        on_update: called with each experiment JSON read.
        interval: seconds between two reads of the experiment.
        logs: False: follow the state only.

    Example::

        exp = follow_experiment(lambda: client.get_experiment(7),
                                lambda t, after: trial_log_page(client, t, after),
                                lambda line: print(line["line"]))
    """
    tail: Optional[LogTail] = None
    while True:
        exp = get_experiment()
        if logs and tail is None and exp.get("trials"):
            first = min(int(t["id"]) for t in exp["trials"])
            tail = LogTail(lambda after: read_page(first, after), emit)
        if tail is not None and not tail.complete:  # (the first trial may end first)
            tail.read_new()
        on_update(exp)
        if exp["state"] in TERMINAL:
            if tail is not None:
                tail.drain()
            return exp
        time.sleep(interval)
