"""Exit codes of spawned processes, and what an exited process leaves behind."""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable, Dict, List

from determined._procs._lines import read_line_batches
from determined.common import scratch

__all__ = ["ExitCodes", "follow_spawned", "kill_leftovers"]


class ExitCodes:
    """Exit codes by pid: reported by the :class:`~determined._procs.Spawner`'s thread
    (``on_exit``), taken by the thread that follows the process. A code reported
    before anyone waits for it is kept."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._codes: Dict[int, int] = {}

    def report(self, pid: int, code: int) -> None:
        with self._cond:
            self._codes[pid] = code
            self._cond.notify_all()

    def known(self, pid: int) -> bool:
        """Whether ``pid`` has exited (its code not taken yet)."""
        with self._cond:
            return pid in self._codes

    def take(self, pid: int) -> int:
        """Block until ``pid`` has exited; its exit code (negative: a signal)."""
        with self._cond:
            while pid not in self._codes:
                self._cond.wait()
            return self._codes.pop(pid)


def kill_leftovers(group: int) -> None:
    """SIGKILL what is left of the process group ``group`` once its leader exited:
    children it left behind would hold its slot's memory and its output pipe. (The
    group's id is not reused while any member lives, so this hits nothing else.)"""
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def follow_spawned(pid: int, out_fd: int, exits: ExitCodes, emit: Callable[[List[str]], None],
                   max_age: float, prefix: str = "") -> int:
    """Pass a spawned process's output lines to ``emit`` in batches
    (:func:`read_line_batches`) until it exited, then end what it left behind in its
    group and remove the scratch directories it owned (:mod:`determined.common.scratch`,
    left by a process that was killed); closes ``out_fd`` and returns the exit code."""
    try:
        read_line_batches(out_fd, emit, max_age, prefix=prefix,
                          exited=lambda: exits.known(pid))
    finally:
        os.close(out_fd)
    code = exits.take(pid)
    kill_leftovers(pid)
    scratch.remove_owned(pid)
    return code
