"""Ctrl-C in a local run, taken at safe points only.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be. In the
driver's loop that can be between reading a trial's request and recording it: the
request is lost, the trial waits for an answer that never comes, and a graceful pause
times out into a kill. While :class:`DeferredInterrupts` is active, SIGINT only counts
and wakes the loop (through :attr:`wake`, a socket the loop waits on with its trial
processes); the loop raises ``KeyboardInterrupt`` itself between events.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any, Optional

__all__ = ["DeferredInterrupts"]


class DeferredInterrupts:
    """Counts SIGINTs while active (a context manager). Outside the main thread, or
    where SIGINT is not Python's default handler (ignored, or the caller's own), it
    changes nothing and SIGINT acts as it did."""

    def __init__(self) -> None:
        self.count = 0  # SIGINTs while active
        self._raised = False
        self.wake: Optional[socket.socket] = None
        self._sender: Optional[socket.socket] = None
        self._previous: Any = None

    def __enter__(self) -> "DeferredInterrupts":
        if threading.current_thread() is not threading.main_thread() or \
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return self
        self.wake, self._sender = socket.socketpair()
        self.wake.setblocking(False)
        self._sender.setblocking(False)
        self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        for s in (self.wake, self._sender):
            if s is not None:
                s.close()
        self.wake = self._sender = None

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.count += 1
        try:
            self._sender.send(b"\0")  # type: ignore[union-attr]
        except OSError:
            pass  # the buffer is full: the loop is awake already

    def drain(self) -> None:
        """Empty the wake-up socket (the count stays)."""
        if self.wake is None:
            return
        try:
            while self.wake.recv(64):
                pass
        except (BlockingIOError, OSError):
            pass

    def raise_pending(self) -> None:
        """Raise ``KeyboardInterrupt`` once a SIGINT came (once: later ones only count).
        Without one, a check of the count only (the loop's every turn)."""
        if not self.count or self._raised:
            return
        self.drain()
        self._raised = True
        raise KeyboardInterrupt
