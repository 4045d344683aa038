"""The ``determined.*`` log lines of a script that configured no logging.

A trial's script (``python3 train.py``) writes its trial log through its stdout and
stderr; Python drops INFO records unless the script configures logging, so what the
Core API and the framework callbacks say (``resumed from checkpoint ...``) would be
lost. While a ``core.init()`` context is open in a process whose root logger has no
handlers, the ``determined`` logger writes INFO and above to stderr in the trial's
format (``12:04:31 INFO message``). It steps aside when the script configures logging
(the root logger has handlers: they print these lines) and is removed when the last
open context closes.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Callable, Optional

from determined.common.log_format import LOG_FORMAT, LOG_TIME_FORMAT

__all__ = ["show_determined_logs"]

_LOGGER = "determined"
_lock = threading.Lock()
_users = 0
_installed: Optional["_UnconfiguredHandler"] = None


class _UnconfiguredHandler(logging.StreamHandler):
    """Writes to the current ``sys.stderr`` while the root logger has no handlers."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter(LOG_FORMAT, LOG_TIME_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return
        self.stream = sys.stderr
        super().emit(record)


def show_determined_logs() -> Callable[[], None]:
    """Show ``determined.*`` INFO lines on stderr when the script configured no logging;
    returns what undoes it (call it once, when the context closes)."""
    global _users, _installed
    with _lock:
        root, det_logger = logging.getLogger(), logging.getLogger(_LOGGER)
        if _installed is None:
            if root.handlers or det_logger.handlers or det_logger.level != logging.NOTSET:
                return _nothing  # the script configured logging: leave it as it is
            _installed = _UnconfiguredHandler()
            det_logger.addHandler(_installed)
            det_logger.setLevel(logging.INFO)
        _users += 1
    done = False

    def undo() -> None:
        global _users, _installed
        nonlocal done
        with _lock:
            if done:
                return
            done = True
            _users -= 1
            if _users == 0 and _installed is not None:
                det_logger.removeHandler(_installed)
                if det_logger.level == logging.INFO:
                    det_logger.setLevel(logging.NOTSET)
                _installed = None

    return undo


def _nothing() -> None:
    pass
