"""A trial's cap on GPU memory when it shares its GPU with other trials.

The agent puts the cap in ``DET_GPU_MEMORY_FRACTION`` (see
``determined._procs._gpus.trial_gpu_env``); :func:`apply_memory_cap` applies it with
``torch.cuda.set_per_process_memory_fraction`` before training, and
:func:`memory_cap_error` turns a CUDA out-of-memory error under a cap into a message
naming the cap and the options that set it.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Mapping, Optional

__all__ = ["apply_memory_cap", "memory_cap_error", "MEMORY_FRACTION_ENV"]

MEMORY_FRACTION_ENV = "DET_GPU_MEMORY_FRACTION"

logger = logging.getLogger("determined.harness")


def _fraction(environ: Mapping[str, str]) -> Optional[float]:
    raw = environ.get(MEMORY_FRACTION_ENV)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"Expected {MEMORY_FRACTION_ENV} to be a fraction in (0, 1]. "
                         f"Received: {raw!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"Expected {MEMORY_FRACTION_ENV} to be a fraction in (0, 1]. "
                         f"Received: {raw!r}")
    return value


def apply_memory_cap(environ: Optional[Mapping[str, str]] = None) -> Optional[float]:
    """Cap this process's use of each visible GPU's memory; the fraction applied, or None
    (no cap asked for, or no PyTorch with CUDA here: then nothing happens)."""
    env = os.environ if environ is None else environ
    fraction = _fraction(env)
    if fraction is None:
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    for device in range(torch.cuda.device_count()):
        torch.cuda.set_per_process_memory_fraction(fraction, device)
    logger.info("GPU memory cap: %.0f%% of GPU %s (its slots are shared by %s trials)",
                fraction * 100, env.get("CUDA_VISIBLE_DEVICES", "?"),
                env.get("DET_SLOTS_PER_GPU", "?"))
    return fraction


def memory_cap_error(error: BaseException, environ: Optional[Mapping[str, str]] = None
                     ) -> Optional[str]:
    """The message for a CUDA out-of-memory ``error`` of a trial under a memory cap, or
    None if ``error`` is something else or no cap applies."""
    env = os.environ if environ is None else environ
    torch = sys.modules.get("torch")
    oom = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)
    seen = []
    cause: Optional[BaseException] = error
    while cause is not None and cause not in seen:  # the OOM may be wrapped
        seen.append(cause)
        cause = cause.__cause__ or cause.__context__
    if oom is None or not any(isinstance(e, oom) for e in seen):
        return None
    try:
        fraction = _fraction(env)
    except ValueError:
        fraction = None
    if fraction is None:
        return None
    cap = ""
    try:
        total = torch.cuda.get_device_properties(0).total_memory
        cap = f" = {fraction * total / 2**30:.2f} GiB"
    except Exception:  # noqa: BLE001 - the cap's size is a detail of the message
        pass
    return (f"the trial ran out of GPU memory under its cap of {fraction:.0%} of GPU "
            f"{env.get('CUDA_VISIBLE_DEVICES', '?')}{cap} (shared by "
            f"{env.get('DET_SLOTS_PER_GPU', '?')} slots). Give each trial more: fewer slots "
            "per GPU (det-agent --slots-per-gpu, or resource_manager.slots_per_gpu in the "
            "master config) or a larger cap (det-agent --gpu-memory-fraction, "
            "resource_manager.gpu_memory_fraction)")
