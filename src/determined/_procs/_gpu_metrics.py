"""GPU metrics: a thread reading each GPU's utilization and memory through NVML at a fixed
rate while trials run on it; agents (remote and embedded) file each reading under the
trials on that GPU (:func:`samples_by_owner`) and send them to the master.

Without NVML (no ``pynvml``, no driver, no GPU) the sampler stops quietly at its start:
nothing is sampled and nothing fails.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Hashable, List, Mapping, Sequence, TypeVar

__all__ = ["GpuSampler", "samples_by_owner", "DEFAULT_INTERVAL"]

logger = logging.getLogger("determined.agent")

#: Seconds between two readings of each GPU.
DEFAULT_INTERVAL = 5.0

#: One reading: ``{time, gpu_index, gpu_uuid, utilization, memory_used, memory_total}``
#: (``time`` in seconds since the epoch, utilization in percent, memory in bytes).
Sample = Dict[str, Any]
K = TypeVar("K", bound=Hashable)


class GpuSampler:
    """Reads every GPU each ``interval`` seconds while ``busy()`` names any, and calls
    ``on_samples`` with the readings of the busy ones.

    Args:
        interval: seconds between readings (> 0).
        busy: the NVML indices of the GPUs trials now run on.
        on_samples: gets a list of readings (called from the sampler's thread).
    """

    def __init__(self, interval: float, busy: Callable[[], Sequence[str]],
                 on_samples: Callable[[List[Sample]], None]):
        if not interval > 0:
            raise ValueError("Expected the GPU metrics interval to be > 0 seconds. "
                             f"Received: {interval!r}")
        self.interval = float(interval)
        self._busy = busy
        self._on_samples = on_samples
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="det-gpu-metrics", daemon=True)

    def start(self) -> "GpuSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as e:  # noqa: BLE001 - no binding, driver or GPU: no metrics
            logger.debug("GPU metrics off: %s", e)
            return
        handles: Dict[str, Any] = {}
        uuids: Dict[str, str] = {}
        try:
            while not self._stop.wait(self.interval):
                wanted = set(self._busy())
                if not wanted:
                    continue
                samples = []
                for index in sorted(wanted):
                    try:
                        if index not in handles:
                            handles[index] = pynvml.nvmlDeviceGetHandleByIndex(int(index))
                            uuid = pynvml.nvmlDeviceGetUUID(handles[index])
                            uuids[index] = uuid.decode() if isinstance(uuid, bytes) else uuid
                        util = pynvml.nvmlDeviceGetUtilizationRates(handles[index])
                        memory = pynvml.nvmlDeviceGetMemoryInfo(handles[index])
                    except pynvml.NVMLError as e:
                        logger.warning("could not read GPU %s: %s", index, e)
                        continue
                    samples.append({"time": time.time(), "gpu_index": int(index),
                                    "gpu_uuid": uuids[index], "utilization": float(util.gpu),
                                    "memory_used": int(memory.used),
                                    "memory_total": int(memory.total)})
                if samples:
                    try:
                        self._on_samples(samples)
                    except Exception:  # noqa: BLE001 - a sink failing must not stop sampling
                        logger.exception("could not file GPU samples")
        finally:
            try:
                pynvml.nvmlShutdown()
            except pynvml.NVMLError:
                pass


def samples_by_owner(samples: Sequence[Sample], owners: Mapping[K, Sequence[str]]
                     ) -> Dict[K, List[Sample]]:
    """Each owner's (trial's) readings: those of the GPUs it runs on.

    Example:
        >>> samples_by_owner([{"gpu_index": 0}, {"gpu_index": 1}], {7: ["1"], 8: []})
        {7: [{'gpu_index': 1}]}
    """
    out: Dict[K, List[Sample]] = {}
    for owner, gpus in owners.items():
        wanted = {int(g) for g in gpus}
        mine = [s for s in samples if s["gpu_index"] in wanted]
        if mine:
            out[owner] = mine
    return out
