"""How the log lines of a distributed trial's ranks read: as the chief's (the trial
process's own format: ``12:04:31 INFO message`` in a local run), each naming its
rank: ``12:04:31 INFO [rank 1] message``.

The chief gives its format to the ranks it starts (:func:`chief_log_format`, in their
spec); a rank started by a launcher without one uses :data:`DEFAULT_LOG_FORMAT`.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Dict, Iterator, List, Optional, Tuple

__all__ = ["DEFAULT_LOG_FORMAT", "chief_log_format", "configure_rank_logging",
           "rank_format", "ranks_named"]

#: The format of a trial process that was given none.
DEFAULT_LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


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
    ranks it starts; :data:`DEFAULT_LOG_FORMAT` when it has none."""
    formatter = _root_formatter()
    fmt = getattr(formatter, "_fmt", None) if formatter is not None else None
    if not fmt:
        return {"format": DEFAULT_LOG_FORMAT, "datefmt": None}
    return {"format": fmt, "datefmt": formatter.datefmt if formatter is not None else None}


def configure_rank_logging(rank: int, given: Optional[Dict[str, Any]], stream: Any) -> None:
    """Log INFO and above to ``stream`` as the chief does (``given``:
    :func:`chief_log_format` of the chief, or None), naming ``rank``."""
    given = given or {}
    fmt = str(given.get("format") or DEFAULT_LOG_FORMAT)
    datefmt = given.get("datefmt") or None
    logging.basicConfig(level=logging.INFO, stream=stream, format=rank_format(fmt, rank),
                        datefmt=datefmt)


@contextlib.contextmanager
def ranks_named(rank: int) -> Iterator[None]:
    """While it lasts, this process's root log handlers name ``rank`` (the chief of a
    distributed trial, whose other ranks name theirs)."""
    changed: List[Tuple[logging.Handler, logging.Formatter]] = []
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
