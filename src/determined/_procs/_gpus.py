"""Which accelerators this machine has, and how an agent lays its slots over them.

The inventory comes from NVML (``nvidia-ml-py``, import name ``pynvml``); where the
NVML library or a driver is missing there are no GPUs (``nvidia-smi -L`` is the fallback
when the Python binding is not installed). An agent offers ``slots_per_gpu`` slots per
GPU (default 1): slot ``i`` is on GPU ``i // slots_per_gpu``. A trial on slots that share
a GPU sees only that GPU and gets a cap on its memory (:func:`trial_gpu_env`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
from typing import Dict, List, Optional, Sequence

__all__ = ["Gpu", "detect_gpus", "default_slots", "gpu_inventory", "slot_gpus",
           "trial_gpu_env", "mps_pipe_directory", "check_slots_per_gpu",
           "check_memory_fraction", "shared_gpu_note"]

logger = logging.getLogger("determined.agent")

#: The environment a trial process reads its GPU memory cap from (a fraction of the card).
MEMORY_FRACTION_ENV = "DET_GPU_MEMORY_FRACTION"


@dataclasses.dataclass(frozen=True)
class Gpu:
    """One NVIDIA GPU.

    Args:
        index: its NVML index, as ``CUDA_VISIBLE_DEVICES`` takes it (with
            ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, which trials get).
        uuid: NVML's ``GPU-...`` id.
        name: the product name, e.g. ``NVIDIA H100 80GB HBM3``.
        memory_total: bytes of memory.
    """

    index: str
    uuid: str = ""
    name: str = ""
    memory_total: int = 0

    def to_json(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_inventory() -> Optional[List[Gpu]]:
    """The GPUs NVML lists; None without the Python binding, [] without a driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:  # no driver, no GPU: a CPU machine
        logger.debug("NVML unavailable: %s", e)
        return []
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            gpus.append(Gpu(index=str(i), uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                            name=_text(pynvml.nvmlDeviceGetName(handle)),
                            memory_total=int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)))
        return gpus
    except pynvml.NVMLError as e:
        logger.warning("NVML could not list the GPUs: %s", e)
        return []
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _smi_inventory() -> List[Gpu]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,name,memory.total",
                              "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 4 and fields[0].isdigit():
            mib = int(fields[3]) if fields[3].isdigit() else 0
            gpus.append(Gpu(fields[0], fields[1], fields[2], mib * 2**20))
    return gpus


def gpu_inventory() -> List[Gpu]:
    """This machine's NVIDIA GPUs ([] without a driver or GPU)."""
    found = _nvml_inventory()
    return _smi_inventory() if found is None else found


def detect_gpus() -> List[str]:
    """Indices of this machine's NVIDIA GPUs ([] without any)."""
    return [g.index for g in gpu_inventory()]


def check_slots_per_gpu(value: int, name: str = "slots_per_gpu") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Expected {name} to be an integer >= 1. Received: {name}={value!r}")
    return value


def check_memory_fraction(value: Optional[float], name: str = "gpu_memory_fraction"
                          ) -> Optional[float]:
    if value is not None and not 0 < value <= 1:
        raise ValueError(f"Expected {name} to be a fraction in (0, 1]. "
                         f"Received: {name}={value!r}")
    return value


def default_slots(slots_per_gpu: int = 1) -> int:
    """``slots_per_gpu`` slots per GPU when there are GPUs, else one per CPU."""
    return len(detect_gpus()) * slots_per_gpu or os.cpu_count() or 1


def slot_gpus(gpus: Sequence[Gpu], slots_per_gpu: int = 1) -> List[Gpu]:
    """The GPU of each slot: ``slots_per_gpu`` consecutive slots per GPU.

    Example:
        >>> [g.index for g in slot_gpus([Gpu("0"), Gpu("1")], 2)]
        ['0', '0', '1', '1']
    """
    check_slots_per_gpu(slots_per_gpu)
    return [g for g in gpus for _ in range(slots_per_gpu)]


def mps_pipe_directory(environ: Optional[Dict[str, str]] = None) -> Optional[str]:
    """The pipe directory of a running CUDA MPS control daemon, or None."""
    env = os.environ if environ is None else environ
    pipes = env.get("CUDA_MPS_PIPE_DIRECTORY") or "/tmp/nvidia-mps"
    return pipes if os.path.exists(os.path.join(pipes, "control")) else None


def trial_gpu_env(by_slot: Sequence[Gpu], slot_ids: Sequence[int], slots_per_gpu: int = 1,
                  memory_fraction: Optional[float] = None) -> Dict[str, str]:
    """The environment of a trial on ``slot_ids`` of an agent whose slots are ``by_slot``
    ({} on an agent without GPUs).

    The trial sees only its GPUs (``CUDA_VISIBLE_DEVICES``, in NVML's order). On GPUs
    shared by several slots, or with an explicit ``memory_fraction``, it gets a memory
    cap: ``memory_fraction`` (default ``1 / slots_per_gpu``) of the card per slot it
    holds there, in :data:`MEMORY_FRACTION_ENV` (the harness applies it with
    ``torch.cuda.set_per_process_memory_fraction``) and, where a CUDA MPS daemon runs,
    as ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``.
    """
    if not by_slot or not slot_ids:
        return {}
    mine: Dict[str, int] = {}
    gpus: Dict[str, Gpu] = {}
    for s in slot_ids:
        gpu = by_slot[s]
        mine[gpu.index] = mine.get(gpu.index, 0) + 1
        gpus[gpu.index] = gpu
    env = {"CUDA_VISIBLE_DEVICES": ",".join(mine), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if memory_fraction is None and slots_per_gpu == 1:
        return env
    per_slot = memory_fraction if memory_fraction is not None else 1.0 / slots_per_gpu
    fraction = min(1.0, per_slot * max(mine.values()))
    env[MEMORY_FRACTION_ENV] = f"{fraction:.6g}"
    env["DET_SLOTS_PER_GPU"] = str(slots_per_gpu)
    if mps_pipe_directory() is not None:
        env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(
            f"{i}={int(gpus[index].memory_total * fraction) // 2**20}M"
            for i, index in enumerate(mine) if gpus[index].memory_total)
    return env


def shared_gpu_note(env: Dict[str, str]) -> Optional[str]:
    """A line for a trial's log saying which GPU it shares and its cap (None if it
    shares none)."""
    if MEMORY_FRACTION_ENV not in env:
        return None
    return (f"GPU {env['CUDA_VISIBLE_DEVICES']} is shared by {env['DET_SLOTS_PER_GPU']} "
            f"slots; this trial may use {float(env[MEMORY_FRACTION_ENV]):.0%} of its memory")
