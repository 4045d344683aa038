"""A child process that must not outlive its parent (Linux only: ``prctl`` through
``libc.so.6``; elsewhere a watcher thread polls the parent's pid)."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Optional

__all__ = ["die_with_parent", "set_parent_death_signal"]

try:  # loaded now: a preexec_fn runs between fork and exec, where importing is unsafe
    import ctypes

    _LIBC: Optional[ctypes.CDLL] = ctypes.CDLL(None, use_errno=True)
except (OSError, ImportError):  # pragma: no cover
    _LIBC = None
_PR_SET_PDEATHSIG = 1


def set_parent_death_signal() -> None:
    """Have the kernel SIGKILL this process when the thread that started it exits
    (``PR_SET_PDEATHSIG``); usable as a ``preexec_fn``. A no-op where unsupported."""
    if _LIBC is not None:
        try:
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except AttributeError:  # no prctl: not Linux
            pass


def die_with_parent(parent_pid: Optional[int]) -> None:
    """Exit when process ``parent_pid`` (this one's parent) is gone: at once if it is
    already, else by the kernel's signal, or a watcher thread where there is none."""
    if not parent_pid:
        return
    set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="det-parent-watch", daemon=True).start()
