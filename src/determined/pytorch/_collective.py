"""The trial's :class:`~determined.harness._collective.Collective` over
``torch.distributed``: NCCL moves the gradients where the ranks have GPUs, gloo
otherwise; decisions and metrics (Python objects) always travel over gloo."""

from __future__ import annotations

import os
from typing import Any, List, Optional

import torch
import torch.distributed as dist

from determined.harness._collective import CONTROL_TIMEOUT, CollectiveError, dist_timeout
from determined.harness._env import DistributedInfo

__all__ = ["TorchCollective", "backend"]


class TorchCollective:
    """Joins the process group of ``info`` (once per process) and implements the
    harness's ``Collective``: ``broadcast``/``allgather`` on a gloo group with a long
    timeout (the chief may wait long for its next operation), ``gather`` on a group
    that times out after ``DET_DIST_TIMEOUT``."""

    def __init__(self, info: DistributedInfo):
        self.info = info
        self.rank, self.size = info.rank, info.size
        self.backend = backend()
        try:
            if not dist.is_initialized():
                if self.backend == "nccl":
                    torch.cuda.set_device(info.local_rank % torch.cuda.device_count())
                dist.init_process_group(
                    self.backend,
                    init_method=f"tcp://{info.master_addr}:{info.master_port}",
                    rank=info.rank,
                    world_size=info.size,
                    timeout=dist_timeout(),
                )
            self._control = dist.new_group(backend="gloo", timeout=CONTROL_TIMEOUT)
            # Python objects (metrics) travel over gloo whatever moves the gradients.
            self._objects = (dist.new_group(backend="gloo", timeout=dist_timeout())
                             if self.backend != "gloo" else None)
        except RuntimeError as e:
            raise CollectiveError.wrap(
                f"joining (rank {info.rank} of {info.size}, rendezvous at "
                f"{info.master_addr}:{info.master_port})", e) from None

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def broadcast(self, obj: Any) -> Any:
        box = [obj]
        try:
            dist.broadcast_object_list(box, src=0, group=self._control)
        except RuntimeError as e:
            raise CollectiveError.wrap("a broadcast from the chief", e) from None
        return box[0]

    def allgather(self, obj: Any) -> List[Any]:
        out: List[Any] = [None] * self.size
        try:
            dist.all_gather_object(out, obj, group=self._control)
        except RuntimeError as e:
            raise CollectiveError.wrap("an all-gather", e) from None
        return out

    def gather(self, obj: Any) -> Optional[List[Any]]:
        out: Optional[List[Any]] = [None] * self.size if self.is_chief else None
        try:
            dist.gather_object(obj, out, dst=0, group=self._objects)
        except RuntimeError as e:
            raise CollectiveError.wrap("gathering metrics", e) from None
        return out

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()


def backend() -> str:
    """``nccl`` where this rank has a GPU (gradients stay on it), else ``gloo``;
    ``DET_DIST_BACKEND`` overrides."""
    forced = os.environ.get("DET_DIST_BACKEND")
    if forced:
        if forced not in ("gloo", "nccl"):
            raise ValueError(f"Expected DET_DIST_BACKEND gloo or nccl. Received: {forced!r}")
        return forced
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    return "gloo"
