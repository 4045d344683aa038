"""``PyTorchTrial``: the class users subclass (both API styles of SPEC 4.2 / 4.3)."""

from __future__ import annotations

import abc
from typing import Any, Dict, Optional, Union

import torch

from determined._trial_controller import Trial
from determined.pytorch._callback import PyTorchCallback
from determined.pytorch._compat import PyTorchTrialController
from determined.pytorch._context import PyTorchTrialContext
from determined.pytorch._data import DataLoader
from determined.pytorch._lr_scheduler import LRScheduler
from determined.pytorch._reducer import Reducer

__all__ = ["PyTorchTrial"]

Batch = Any
TorchData = Union[Dict[str, torch.Tensor], Any]


class PyTorchTrial(Trial):
    """Subclass this to train a PyTorch model on the platform.

    Context style (0.13): build and wrap models and optimizers in ``__init__``
    with ``context.wrap_model`` / ``wrap_optimizer``, and in ``train_batch(batch,
    epoch_idx, batch_idx)`` call ``context.backward(loss)`` and
    ``context.step_optimizer(opt)``.

    Legacy style (<= 0.12): override ``build_model()``, ``optimizer(model)`` and
    optionally ``create_lr_scheduler(optimizer)``; ``train_batch(batch, model,
    epoch_idx, batch_idx)`` returns a dict with ``"loss"`` and the platform runs
    backward and the optimizer step.

    Example:
        >>> class MyTrial(det.pytorch.PyTorchTrial):                   # doctest: +SKIP
        ...     def __init__(self, context):
        ...         self.context = context
        ...         self.model = context.wrap_model(torch.nn.Linear(8, 2))
        ...         self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), 0.1))
        ...     def train_batch(self, batch, epoch_idx, batch_idx):
        ...         x, y = batch
        ...         loss = torch.nn.functional.cross_entropy(self.model(x), y)
        ...         self.context.backward(loss)
        ...         self.context.step_optimizer(self.opt)
        ...         return {"loss": loss}
    """

    trial_context_class = PyTorchTrialContext
    trial_controller_class = PyTorchTrialController  # upstream's name (not used to run it)

    def __init__(self, context: PyTorchTrialContext) -> None:
        self.context = context

    @abc.abstractmethod
    def train_batch(
        self, batch: Batch, epoch_idx: int, batch_idx: int
    ) -> Union[torch.Tensor, Dict[str, Any]]:
        """Train on one batch; return a loss tensor or a dict of metrics.

        Context style: ``train_batch(batch, epoch_idx, batch_idx)``. Legacy style:
        ``train_batch(batch, model, epoch_idx, batch_idx)`` returning ``{"loss": ...}``.
        ``batch_idx`` counts the batches this slot trained since the trial began.
        """

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader:
        """Return a ``det.pytorch.DataLoader`` for training (it repeats forever)."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader:
        """Return a ``det.pytorch.DataLoader`` for validation (one pass)."""

    def evaluate_batch(self, batch: Batch) -> Dict[str, Any]:
        """Metrics of one validation batch; reduced by ``evaluation_reducer()``."""
        raise NotImplementedError

    def evaluate_full_dataset(self, data_loader: Any) -> Dict[str, Any]:
        """Metrics of the whole validation set (chief only)."""
        raise NotImplementedError

    def evaluation_reducer(self) -> Union[Reducer, Dict[str, Any]]:
        """How per-batch validation metrics reduce: one reducer or one per metric."""
        return Reducer.AVG

    def build_callbacks(self) -> Dict[str, PyTorchCallback]:
        """Lifecycle callbacks by name."""
        return {}

    # ---- legacy style (seed 003)

    def build_model(self) -> torch.nn.Module:
        """Legacy: return the model (the platform wraps it)."""
        raise NotImplementedError

    def optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        """Legacy: return the optimizer of ``model``."""
        raise NotImplementedError

    def create_lr_scheduler(self, optimizer: torch.optim.Optimizer) -> Optional[LRScheduler]:
        """Legacy: return a ``det.pytorch.LRScheduler`` or None."""
        return None


def overridden(trial: Any, name: str) -> bool:
    """Whether ``trial``'s class overrides PyTorchTrial's ``name``."""
    return getattr(type(trial), name, None) is not getattr(PyTorchTrial, name)
