"""PyTorch trials: ``PyTorchTrial``, its context, ``DataLoader``, ``LRScheduler``, ``Reducer``."""

from determined.pytorch._callback import ClipGradsL2Norm, ClipGradsL2Value, PyTorchCallback
from determined.pytorch._compat import PyTorchTrialController, reset_parameters
from determined.pytorch._context import PyTorchTrialContext
from determined.pytorch._data import (
    DataLoader,
    DistributedBatchSampler,
    RepeatBatchSampler,
    SkipBatchSampler,
    TorchData,
    _Data,
    adapt_batch_sampler,
    data_length,
    to_device,
)
from determined.pytorch._load import load_trial_from_checkpoint_path
from determined.pytorch._lr_scheduler import LRScheduler
from determined.pytorch._reducer import MetricReducer, Reducer, _reduce_metrics
from determined.pytorch._trial import PyTorchTrial

__all__ = [
    "ClipGradsL2Norm",
    "ClipGradsL2Value",
    "DataLoader",
    "DistributedBatchSampler",
    "LRScheduler",
    "MetricReducer",
    "PyTorchCallback",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "PyTorchTrialController",
    "Reducer",
    "RepeatBatchSampler",
    "SkipBatchSampler",
    "TorchData",
    "adapt_batch_sampler",
    "data_length",
    "load_trial_from_checkpoint_path",
    "reset_parameters",
    "to_device",
]
