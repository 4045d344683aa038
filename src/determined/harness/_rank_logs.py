"""How a trial's log lines read, in every process of it: ``12:04:31 INFO message``
(:data:`LOG_FORMAT` with :data:`LOG_TIME_FORMAT`), whether a local run's trial
process, a trial process an agent or Ray starts for the master, or one of its ranks;
a distributed trial's lines each name their rank: ``12:04:31 INFO [rank 1] message``.

A trial process logs so with :func:`configure_trial_logging`. The chief gives its
format to the ranks it starts (:func:`chief_log_format`, in their spec); a rank started
by a launcher (an agent, a Ray actor) without one uses the same format. A process whose
every output line ``determined.launch.wrap_rank`` prefixes (``[rank=1] ``; it sets
``DET_RANK_PREFIXED``) does not name its rank again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Dict, Iterator, List, Optional, TextIO, Tuple

# A trial process's lines read as every process serving the cluster but the master's:
# ``time level message``, the time short (common/log_format.py says why).
from determined.common.log_format import LOG_FORMAT, LOG_TIME_FORMAT

__all__ = ["LOG_FORMAT", "LOG_TIME_FORMAT", "chief_log_format", "configure_rank_logging",
           "configure_trial_logging", "rank_format", "ranks_named"]



def configure_trial_logging(stream: TextIO) -> None:
    """Log INFO and above to ``stream`` in the trial format (``12:04:31 INFO message``)."""
    logging.basicConfig(level=logging.INFO, stream=stream, format=LOG_FORMAT,
                        datefmt=LOG_TIME_FORMAT)


def rank_format(fmt: str, rank: int) -> str:
    """``fmt`` with ``[rank N]`` before the message.

    Example:
        >>> rank_format("%(asctime)s %(levelname)s %(message)s", 1)
        '%(asctime)s %(levelname)s [rank 1] %(message)s'
    """
    if "%(message)s" not in fmt:
        return f"[rank {rank}] {fmt}"
    return fmt.replace("%(message)s", f"[rank {rank}] %(message)s", 1)


def _root_formatter() -> Optional[logging.Formatter]:
    for handler in logging.getLogger().handlers:
        if handler.formatter is not None:
            return handler.formatter
    return None


def chief_log_format() -> Dict[str, Optional[str]]:
    """The format (``format``, ``datefmt``) of this process's root log handler, for the
    ranks it starts; the trial format when it has none."""
    formatter = _root_formatter()
    fmt = getattr(formatter, "_fmt", None) if formatter is not None else None
    if not fmt:
        return {"format": LOG_FORMAT, "datefmt": LOG_TIME_FORMAT}
    return {"format": fmt, "datefmt": formatter.datefmt if formatter is not None else None}


def configure_rank_logging(rank: int, given: Optional[Dict[str, Any]], stream: Any) -> None:
    """Log INFO and above to ``stream`` as the chief does (``given``:
    :func:`chief_log_format` of the chief; None: the trial format), naming ``rank``."""
    given = given or {}
    if given.get("format"):
        fmt, datefmt = str(given["format"]), given.get("datefmt") or None
    else:  # started by a launcher: the format every trial process logs in
        fmt, datefmt = LOG_FORMAT, LOG_TIME_FORMAT
    logging.basicConfig(level=logging.INFO, stream=stream, format=rank_format(fmt, rank),
                        datefmt=datefmt)


@contextlib.contextmanager
def ranks_named(rank: int) -> Iterator[None]:
    """While it lasts, this process's root log handlers name ``rank`` (the chief of a
    distributed trial, whose other ranks name theirs); unless ``wrap_rank`` prefixes
    each line of its output with the rank already."""
    from determined.launch.wrap_rank import RANK_PREFIXED

    changed: List[Tuple[logging.Handler, logging.Formatter]] = []
    if os.environ.get(RANK_PREFIXED):
        yield
        return
    for handler in logging.getLogger().handlers:
        formatter = handler.formatter
        fmt = getattr(formatter, "_fmt", None)
        if formatter is None or not fmt:
            continue
        handler.setFormatter(logging.Formatter(rank_format(fmt, rank), formatter.datefmt))
        changed.append((handler, formatter))
    try:
        yield
    finally:
        for handler, formatter in changed:
            handler.setFormatter(formatter)
