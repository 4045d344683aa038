"""Shared by the launchers: how a command's first word is resolved, and signals passed
on to a child."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Iterator, List

__all__ = ["resolve_command", "forward_signals"]

_PYTHONS = ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}")


def resolve_command(command: List[str]) -> List[str]:
    """``command`` with a bare ``python``/``python3`` first word replaced by this
    interpreter, so ranks run with the trial's environment (its virtualenv)."""
    if command and command[0] in _PYTHONS:
        return [sys.executable, *command[1:]]
    return list(command)


@contextlib.contextmanager
def forward_signals(proc: subprocess.Popen,
                    signums: tuple = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)
                    ) -> Iterator[None]:
    """While inside, the signals this process receives go on to ``proc``."""
    previous = {}

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            try:
                os.kill(proc.pid, signum)
            except ProcessLookupError:
                pass

    for signum in signums:
        previous[signum] = signal.signal(signum, forward)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
