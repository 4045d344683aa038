"""TinyTrial that records where its model and batches live (for the GPU tests)."""

import json
import os

from model_def import TinyTrial  # noqa: F401  (tests copy tiny_pytorch next to this file)


class DeviceTrial(TinyTrial):
    """Writes its model's device and ``CUDA_VISIBLE_DEVICES`` to ``data.device_file``
    and reports ``on_cuda`` (1.0 when the model and the batches are on a GPU)."""

    def __init__(self, context):
        super().__init__(context)
        path = context.get_data_config().get("device_file")
        if path:
            with open(path, "a") as f:
                f.write(json.dumps({
                    "device": str(next(self.model.parameters()).device),
                    "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                }) + "\n")

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, _ = batch
        if not x.is_cuda:
            raise AssertionError(f"batch on {x.device}, expected a GPU")
        return super().train_batch(batch, epoch_idx, batch_idx)

    def evaluate_batch(self, batch):
        metrics = super().evaluate_batch(batch)
        on_gpu = batch[0].is_cuda and next(self.model.parameters()).is_cuda
        metrics["on_cuda"] = 1.0 if on_gpu else 0.0
        return metrics
