"""Lifecycle events in the master's log: experiments, trials and tasks changing state,
agents joining and leaving. One INFO line each from the logger ``lifecycle``, so they
read ``lifecycle: trial 4 of experiment 2 started on agent-1 slots [0]`` in the master's
log (``det master logs``) and stand out from the rest.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["event"]

_logger = logging.getLogger("lifecycle")


def event(message: str, *args: Any) -> None:
    """Log one lifecycle event (``logging``-style ``%`` arguments)."""
    _logger.info(message, *args)
