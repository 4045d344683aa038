"""``TorchWriter``: a ``torch.utils.tensorboard.SummaryWriter`` on the trial's event directory.

Example (upstream's usage)::

    from determined.tensorboard.metric_writers.pytorch import TorchWriter

    class MyTrial(PyTorchTrial):
        def __init__(self, context):
            self.logger = TorchWriter()

        def train_batch(self, batch, epoch_idx, batch_idx):
            ...
            self.logger.writer.add_histogram("weights", self.model.fc.weight, batch_idx)
"""

from __future__ import annotations

import sys
import types
from typing import Any

from determined import tensorboard
from determined.tensorboard._paths import local_event_dir

__all__ = ["TorchWriter"]


def _without_tensorflow() -> None:
    """Make the ``tensorboard`` package use its TF stub in this process: importing
    TensorFlow into a PyTorch trial costs seconds and memory (TensorBoard's own switch,
    the ``tensorboard.compat.notf`` module)."""
    if "tensorflow" not in sys.modules:
        sys.modules.setdefault("tensorboard.compat.notf",
                               types.ModuleType("tensorboard.compat.notf"))


class TorchWriter(tensorboard.MetricWriter):
    """Writes to the trial's TensorBoard directory, which the platform syncs to checkpoint
    storage after every workload. ``writer`` is the ``SummaryWriter`` for anything
    beyond scalars (histograms, images, graphs)."""

    def __init__(self) -> None:
        _without_tensorflow()
        from torch.utils.tensorboard import SummaryWriter

        self.writer: Any = SummaryWriter(local_event_dir())  # type: ignore[no-untyped-call]

    def add_scalar(self, name: str, value: Any, step: int) -> None:
        if hasattr(value, "item"):
            value = value.item()
        self.writer.add_scalar(name, value, step)

    def reset(self) -> None:
        self.writer.flush()
