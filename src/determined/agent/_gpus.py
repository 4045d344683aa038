"""Which accelerators this machine has: an agent offers one slot per GPU."""

import shutil
import subprocess
from typing import List

__all__ = ["detect_gpus", "default_slots"]


def detect_gpus() -> List[str]:
    """Indices of the NVIDIA GPUs ``nvidia-smi -L`` lists ([] without nvidia-smi)."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.splitlines():
        if line.startswith("GPU "):
            gpus.append(line[4:].split(":", 1)[0].strip())
    return gpus


def default_slots() -> int:
    """One slot per GPU when there are GPUs, else one per CPU."""
    import os

    return len(detect_gpus()) or os.cpu_count() or 1
