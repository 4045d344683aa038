"""Helpers for tests of GPU slots and GPU metrics without a GPU: the environment that puts
the test-only ``pynvml`` stand-in (``tests/fixtures/fake_nvml``) first on a process's
path, and a trial printing the GPU environment its agent gave it."""

import json
import os
import pathlib
import re
import shutil
from typing import Any, Dict, List, Optional

FAKE_NVML_DIR = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "fake_nvml"
TINY_DIR = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tiny_pytorch"
GIB = 2**30

ENV_TRIAL = '''"""TinyTrial printing its GPU environment; hparams: sleep (seconds per batch),
oom_at_batch (raise torch.cuda.OutOfMemoryError there, as CUDA's allocator does),
alloc_fraction (on a GPU: hold a tensor of that fraction of the card's memory)."""
import json
import os
import time

import torch

from model_def import TinyTrial

KEYS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "DET_GPU_MEMORY_FRACTION",
        "DET_SLOTS_PER_GPU", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")


class EnvTrial(TinyTrial):
    def __init__(self, context):
        super().__init__(context)
        seen = {k: os.environ.get(k) for k in KEYS}
        seen["torch_devices"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
        print("GPU-ENV " + json.dumps(seen), flush=True)
        self.held = None

    def train_batch(self, batch, epoch_idx, batch_idx):
        hp = self.context.get_hparams()
        time.sleep(hp.get("sleep", 0.0))
        if hp.get("alloc_fraction") and self.held is None and torch.cuda.is_available():
            total = torch.cuda.get_device_properties(0).total_memory
            self.held = torch.empty(int(hp["alloc_fraction"] * total), dtype=torch.uint8,
                                    device="cuda")
        if hp.get("oom_at_batch") is not None and batch_idx >= hp["oom_at_batch"]:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return super().train_batch(batch, epoch_idx, batch_idx)
'''


def fake_gpus(n: int, memory_gib: int = 16, name: str = "Fake GPU 9000") -> List[Dict[str, Any]]:
    return [{"name": name, "uuid": f"GPU-fake-{i}", "memory_total": memory_gib * GIB,
             "memory_used": (i + 1) * GIB, "utilization": 40 + 10 * i} for i in range(n)]


def fake_nvml_env(gpus: Optional[List[Dict[str, Any]]]) -> Dict[str, str]:
    """This process's environment with the stand-in ``pynvml`` first on the path and, if
    ``gpus`` is given, describing those GPUs (else NVML fails as without a driver)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(FAKE_NVML_DIR), env.get("PYTHONPATH")) if p)
    env.pop("FAKE_NVML", None)
    if gpus is not None:
        env["FAKE_NVML"] = json.dumps({"gpus": gpus})
    return env


def env_model_dir(dest: pathlib.Path) -> pathlib.Path:
    """A copy of tests/fixtures/tiny_pytorch plus ``env_def:EnvTrial``."""
    path = dest / "env_model"
    shutil.copytree(TINY_DIR, path, ignore=shutil.ignore_patterns("__pycache__"))
    (path / "env_def.py").write_text(ENV_TRIAL)
    return path


def env_config(trials: int = 2, label: str = "", sleep: float = 0.05,
               **hparams: Any) -> Dict[str, Any]:
    """``trials`` EnvTrials of 40 batches each, run at once where there are slots."""
    config = {
        "entrypoint": "env_def:EnvTrial",
        "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "sleep": sleep,
                            "lr": {"type": "categorical",
                                   "vals": [0.1 / (i + 1) for i in range(trials)]},
                            **hparams},
        "searcher": {"name": "grid", "metric": "validation_loss",
                     "max_length": {"batches": 40}},
        "min_validation_period": {"batches": 20},
        "max_restarts": 0,
    }
    if label:
        config["resources"] = {"agent_label": label}
    return config


def trial_gpu_env(log: str) -> Dict[str, Optional[str]]:
    """The environment an EnvTrial printed (its last process's)."""
    found = re.findall(r"GPU-ENV (\{.*\})", log)
    assert found, log[-3000:]
    return json.loads(found[-1])


def trial_slots(log: str) -> List[int]:
    """The slots the agent started the trial on, from its log line."""
    found = re.search(r"starting trial \d+ on slot\(s\) ([\d,]+)", log)
    assert found, log[-3000:]
    return [int(s) for s in found.group(1).split(",")]
