"""Process output as batches of lines: the one reader every launcher uses (the agent,
the master's embedded agent, Ray's actors, task processes)."""

from __future__ import annotations

import os
import select
import time
from typing import Callable, List

__all__ = ["read_line_batches"]


def read_line_batches(fd: int, emit: Callable[[List[str]], None], max_age: float,
                      max_lines: int = 200, prefix: str = "") -> None:
    """Read ``fd`` to its end, passing its lines (each after ``prefix``) to ``emit`` in
    batches: a batch goes out once it holds ``max_lines`` lines or its first line is
    ``max_age`` seconds old, even while no more output comes (a service that prints one
    line and then waits). ``fd`` stays open."""
    batch: List[str] = []
    first = 0.0  # when the batch's first line arrived
    pending = b""
    while True:
        timeout = max(0.0, first + max_age - time.monotonic()) if batch else None
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
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
