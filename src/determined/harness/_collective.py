"""What the trial runner and the controllers need from a trial's ranks: the
:class:`Collective` protocol, its error and its timeout. The implementation is
``torch.distributed`` (``determined.pytorch._collective``); :mod:`._group` joins it.

Failure: a rank that dies closes its sockets, so the others' next collective
raises at once; a rank that hangs makes them time out after ``DET_DIST_TIMEOUT``
seconds (default 600).
"""

from __future__ import annotations

import datetime
import os
from typing import Any, List, Optional, Protocol

from determined.errors import DeterminedError

__all__ = ["Collective", "CollectiveError", "dist_timeout", "CONTROL_TIMEOUT"]

CONTROL_TIMEOUT = datetime.timedelta(days=7)  # ranks wait on the chief's host for ops


class CollectiveError(DeterminedError):
    """An exchange between a trial's ranks failed: another rank died or hung. Not the
    user's code's fault, so the platform restarts the trial (``max_restarts``)."""

    @classmethod
    def wrap(cls, what: str, exc: BaseException) -> "CollectiveError":
        return cls(f"{what} across the trial's ranks failed (another rank died or hung): {exc}")


def dist_timeout() -> datetime.timedelta:
    """``DET_DIST_TIMEOUT`` (seconds, default 600): how long a collective waits for a peer."""
    raw = os.environ.get("DET_DIST_TIMEOUT", "600")
    try:
        seconds = float(raw)
    except ValueError:
        raise ValueError(
            f"Expected DET_DIST_TIMEOUT to be a number of seconds. Received: {raw!r}"
        ) from None
    return datetime.timedelta(seconds=seconds)


class Collective(Protocol):
    """The exchanges between a trial's ranks. ``broadcast`` and ``allgather`` carry the
    chief's decisions (they may wait long for its next operation); ``gather`` moves
    metrics and times out after :func:`dist_timeout`. Each raises
    :class:`CollectiveError` when a peer died or hung."""

    rank: int
    size: int
    backend: str  # what moves the gradients: "nccl" or "gloo"

    @property
    def is_chief(self) -> bool: ...

    def broadcast(self, obj: Any) -> Any:
        """The chief's ``obj`` on every rank (others pass anything, e.g. None)."""

    def allgather(self, obj: Any) -> List[Any]:
        """Every rank's ``obj``, by rank, on every rank."""

    def gather(self, obj: Any) -> Optional[List[Any]]:
        """Every rank's ``obj``, by rank, on the chief; None elsewhere."""

    def close(self) -> None:
        """Leave the group (after the last collective every rank ran)."""
