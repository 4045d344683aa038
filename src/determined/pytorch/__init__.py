"""PyTorch trials: ``PyTorchTrial``, its context, ``DataLoader``, ``LRScheduler``, ``Reducer``."""

from determined.pytorch._callback import ClipGradsL2Norm, ClipGradsL2Value, PyTorchCallback
from determined.pytorch._context import PyTorchTrialContext
from determined.pytorch._data import DataLoader, to_device
from determined.pytorch._load import load_trial_from_checkpoint_path
from determined.pytorch._lr_scheduler import LRScheduler
from determined.pytorch._reducer import MetricReducer, Reducer
from determined.pytorch._trial import PyTorchTrial

__all__ = [
    "ClipGradsL2Norm",
    "ClipGradsL2Value",
    "DataLoader",
    "LRScheduler",
    "MetricReducer",
    "PyTorchCallback",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "Reducer",
    "load_trial_from_checkpoint_path",
    "to_device",
]
