"""TinyTrials for the GPU tests: where the model and batches live, and the random
streams and weights across restores."""

import json
import os
import random
import time

import numpy as np
import torch

from determined import pytorch
from model_def import TinyTrial  # noqa: F401  (tests copy tiny_pytorch next to this file)


class DeviceTrial(TinyTrial):
    """Writes its model's device and ``CUDA_VISIBLE_DEVICES`` to ``data.device_file``,
    checks that batches are on ``data.device`` (``cuda``, the default, or ``cpu`` for
    the tests' CPU variants) and reports ``on_cuda`` (1.0 when the model and the
    batches are on a GPU)."""

    def __init__(self, context):
        super().__init__(context)
        self.expected_device = context.get_data_config().get("device", "cuda")
        path = context.get_data_config().get("device_file")
        if path:
            with open(path, "a") as f:
                f.write(json.dumps({
                    "device": str(next(self.model.parameters()).device),
                    "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                }) + "\n")

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, _ = batch
        if x.device.type != self.expected_device:
            raise AssertionError(f"batch on {x.device}, expected {self.expected_device}")
        return super().train_batch(batch, epoch_idx, batch_idx)

    def evaluate_batch(self, batch):
        metrics = super().evaluate_batch(batch)
        on_gpu = batch[0].is_cuda and next(self.model.parameters()).is_cuda
        metrics["on_cuda"] = 1.0 if on_gpu else 0.0
        return metrics


def weights_hash(models) -> float:
    """A 40-bit hash of the models' parameters and buffers (an exact float)."""
    import hashlib

    h = hashlib.sha1()
    for model in models:
        for name, tensor in sorted(model.state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return float(int(h.hexdigest()[:10], 16))


class StartupHash(pytorch.PyTorchCallback):
    """Appends the weights' hash at trial startup (after any restore) to a file."""

    def __init__(self, context, path):
        self.context, self.path = context, path

    def on_trial_startup(self, first_batch_idx):
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps({"batch": first_batch_idx,
                                    "hash": weights_hash(self.context.models)}) + "\n")


class RngTrial(DeviceTrial):
    """Reports one draw of each random stream per batch (Python, NumPy, torch CPU and,
    on a GPU, CUDA; dropout draws from CUDA there) and the weights' hash at each validation, so that
    a resumed run can be compared with an uninterrupted one number for number.
    ``data.sleep`` slows each batch so a test can act mid-training."""

    def build_callbacks(self):
        callbacks = super().build_callbacks()
        startup_file = self.context.get_data_config().get("startup_file")
        callbacks["startup"] = StartupHash(self.context, startup_file)
        return callbacks

    def train_batch(self, batch, epoch_idx, batch_idx):
        time.sleep(self.context.get_data_config().get("sleep", 0.0))
        out = super().train_batch(batch, epoch_idx, batch_idx)
        out.update(py_rand=random.random(), np_rand=float(np.random.rand()),
                   torch_rand=torch.rand(1).item())
        if self.expected_device == "cuda":
            out["cuda_rand"] = torch.rand(1, device="cuda").item()
        return out

    def evaluate_batch(self, batch):
        metrics = super().evaluate_batch(batch)
        metrics["weights_hash"] = weights_hash(self.context.models)
        return metrics
