"""This process's place in its trial's group of ranks: :func:`connect` joins it
once (with ``torch.distributed``, imported only then) and :func:`disconnect` leaves."""

from __future__ import annotations

import logging
from typing import Optional

from determined.harness._collective import Collective
from determined.harness._env import DistributedInfo

__all__ = ["connect", "disconnect"]

logger = logging.getLogger("determined")

_current: Optional[Collective] = None


def connect(info: DistributedInfo) -> Optional[Collective]:
    """This process's :class:`Collective` (joined once per process); None for one slot."""
    global _current
    if info.size <= 1:
        return None
    if _current is None:
        try:
            from determined.pytorch._collective import TorchCollective
        except ImportError:
            raise RuntimeError(
                "distributed training (resources.slots_per_trial > 1) needs PyTorch"
            ) from None
        _current = TorchCollective(info)
    return _current


def disconnect() -> None:
    """Leave the group joined by :func:`connect`, if any."""
    global _current
    if _current is not None:
        current, _current = _current, None
        try:
            current.close()
        except Exception as e:  # the trial's outcome is already decided
            logger.warning("leaving the distributed group failed: %s", e)
