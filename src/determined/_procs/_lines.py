"""Process output as batches of lines: the one reader every launcher uses (the agent,
the master's embedded agent, Ray's actors, task processes)."""

from __future__ import annotations

import os
import select
import time
from typing import Callable, List, Optional

__all__ = ["read_line_batches"]

#: How often a quiet pipe's process is checked for its exit.
EXIT_POLL_SECONDS = 0.25
#: After its process exited, a pipe is read until it is quiet this long (what the process
#: wrote is in the pipe by then; more can only come from a child it left behind) ...
QUIET_SECONDS = 0.05
#: ... or for this long at most (a child it left behind that keeps writing).
DRAIN_SECONDS = 5.0


def read_line_batches(fd: int, emit: Callable[[List[str]], None], max_age: float,
                      max_lines: int = 200, prefix: str = "",
                      exited: Optional[Callable[[], bool]] = None) -> None:
    """Read ``fd`` to its end, passing its lines (each after ``prefix``) to ``emit`` in
    batches: a batch goes out once it holds ``max_lines`` lines or its first line is
    ``max_age`` seconds old, even while no more output comes (a service that prints one
    line and then waits). ``fd`` stays open.

    With ``exited`` (true once the writing process has ended), reading also ends soon
    after that exit without waiting for the end of ``fd``: a child the process left
    behind (a data loader's worker, a background command) may hold it open for good.
    """
    batch: List[str] = []
    first = 0.0  # when the batch's first line arrived
    pending = b""
    drain_until: Optional[float] = None  # set once the process has exited
    while True:
        timeout = max(0.0, first + max_age - time.monotonic()) if batch else None
        if exited is not None:
            if drain_until is None and exited():
                drain_until = time.monotonic() + DRAIN_SECONDS
            wake = QUIET_SECONDS if drain_until is not None else EXIT_POLL_SECONDS
            timeout = wake if timeout is None else min(timeout, wake)
        ready, _, _ = select.select([fd], [], [], timeout)
        if drain_until is not None and (not ready or time.monotonic() > drain_until):
            break
        if not ready:
            if batch and time.monotonic() >= first + max_age:
                emit(batch)
                batch = []
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for raw in lines:
            if not batch:
                first = time.monotonic()
            batch.append(prefix + raw.decode("utf-8", errors="replace"))
            if len(batch) >= max_lines:
                emit(batch)
                batch = []
    if pending:
        batch.append(prefix + pending.decode("utf-8", errors="replace"))
    if batch:
        emit(batch)
