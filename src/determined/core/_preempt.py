"""``core.preempt``: whether the trial must checkpoint and exit now (pause, a
searcher's stop, a higher-priority experiment, master shutdown). Determined 0.38's
``PreemptContext``. The chief asks the host; the other ranks get its answer, or, with
``PreemptMode.WorkersAskMaster``, ask the trial process themselves."""

from __future__ import annotations

import enum
import logging
import os
from multiprocessing.connection import Client
from typing import Any, Optional

from determined.core._distributed import DistributedContext
from determined.core._session import Session

__all__ = ["PreemptContext", "DummyPreemptContext", "PreemptMode"]

logger = logging.getLogger("determined.core")


class PreemptMode(enum.Enum):
    """``WorkersAskChief``: every rank calls ``should_preempt()`` in step and gets the
    chief's answer. ``ChiefOnly``: only the chief calls it. ``WorkersAskMaster``: every
    rank may call it on its own, whenever it likes (no collective): each rank opens its
    own link to the trial process, which tells every link when the trial must stop.
    The link is a Unix socket on the chief's machine: a trial whose ranks span machines
    falls back to ``WorkersAskChief`` (every rank calls in step)."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class PreemptContext:
    def __init__(self, session: Session, distributed: DistributedContext,
                 preempt_mode: PreemptMode = PreemptMode.WorkersAskChief) -> None:
        self._session = session
        self._dist = distributed
        self._mode = PreemptMode(preempt_mode)
        if self._mode is PreemptMode.WorkersAskMaster and distributed.cross_size > 1:
            logger.info("PreemptMode.WorkersAskMaster on a trial spanning machines: ranks "
                        "get the chief's answer (call should_preempt() in step)")
            self._mode = PreemptMode.WorkersAskChief
        self._own_link: Optional[Any] = None  # a worker's LinkHost, in WorkersAskMaster mode
        self._stopping = False  # once true it stays true

    def start(self) -> None:
        """Nothing runs in the background here; kept for upstream's lifecycle."""

    def close(self) -> None:
        if self._own_link is not None:
            self._own_link.close()
            self._own_link = None

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """True when the trial should checkpoint and exit (it resumes later from that
        checkpoint). ``WorkersAskChief``: every rank calls it in step. ``WorkersAskMaster``:
        any rank, any time (each rank may see the stop a poll later than another)."""
        if self._dist.rank == 0:
            host = self._session.host
            if not self._stopping and host is not None:
                self._stopping = bool(host.should_stop())
            answer = self._stopping
            if self._mode is PreemptMode.WorkersAskChief and self._dist.size > 1:
                self._dist.broadcast(answer)
            return answer
        if self._mode is PreemptMode.ChiefOnly:
            raise RuntimeError("should_preempt() with PreemptMode.ChiefOnly may be called "
                               "only on the chief (rank 0)")
        if self._mode is PreemptMode.WorkersAskMaster:
            if not self._stopping and self._session.env is not None:  # None: by hand
                self._stopping = bool(self._worker_link().should_stop())
            return self._stopping
        return bool(self._dist.broadcast(None))

    def _worker_link(self) -> Any:
        """This worker's own link to the trial process (opened on first use); it only
        listens for the trial process's stop."""
        if self._own_link is None:
            from determined.harness._script_link import AUTHKEY_ENV, LINK_ENV, LinkHost

            address = os.environ.get(LINK_ENV)
            if not address:
                raise RuntimeError(
                    f"PreemptMode.WorkersAskMaster: rank {self._dist.rank} has no {LINK_ENV} "
                    "in its environment; start the ranks from the trial's entrypoint (e.g. "
                    "python3 -m determined.launch.torch_distributed) so they inherit it")
            authkey = bytes.fromhex(os.environ.get(AUTHKEY_ENV, ""))
            self._own_link = LinkHost(Client(address, family="AF_UNIX", authkey=authkey))
        return self._own_link

    def acknowledge_preemption_signal(self) -> None:
        """Accepted for compatibility: the trial's host needs no acknowledgement."""


DummyPreemptContext = PreemptContext
