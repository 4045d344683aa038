"""``core.preempt``: whether the trial must checkpoint and exit now (pause, a
searcher's stop, a higher-priority experiment, master shutdown). Determined 0.38's
``PreemptContext``. The chief asks the host; the other ranks get its answer."""

from __future__ import annotations

import enum
import logging

from determined.core._distributed import DistributedContext
from determined.core._session import Session

__all__ = ["PreemptContext", "DummyPreemptContext", "PreemptMode"]

logger = logging.getLogger("determined.core")


class PreemptMode(enum.Enum):
    """``WorkersAskChief``: every rank calls ``should_preempt()`` in step and gets the
    chief's answer. ``ChiefOnly``: only the chief calls it. ``WorkersAskMaster``: here
    the same as ``WorkersAskChief`` (only the chief talks to the platform)."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class PreemptContext:
    def __init__(self, session: Session, distributed: DistributedContext,
                 preempt_mode: PreemptMode = PreemptMode.WorkersAskChief) -> None:
        self._session = session
        self._dist = distributed
        self._mode = PreemptMode(preempt_mode)
        self._stopping = False  # once true it stays true

    def start(self) -> None:
        """Nothing runs in the background here; kept for upstream's lifecycle."""

    def close(self) -> None:
        pass

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """True when the trial should checkpoint and exit (it resumes later from that
        checkpoint). In ``WorkersAskChief`` mode every rank must call it in step."""
        if self._dist.rank == 0:
            host = self._session.host
            if not self._stopping and host is not None:
                self._stopping = bool(host.should_stop())
            answer = self._stopping
            if self._mode is not PreemptMode.ChiefOnly and self._dist.size > 1:
                self._dist.broadcast(answer)
            return answer
        if self._mode is PreemptMode.ChiefOnly:
            raise RuntimeError("should_preempt() with PreemptMode.ChiefOnly may be called "
                               "only on the chief (rank 0)")
        return bool(self._dist.broadcast(None))

    def acknowledge_preemption_signal(self) -> None:
        """Accepted for compatibility: the trial's host needs no acknowledgement."""


DummyPreemptContext = PreemptContext
