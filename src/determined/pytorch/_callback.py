"""Hooks user code can attach to a PyTorch trial's lifecycle."""

from __future__ import annotations

from typing import Any, Dict, Iterator

import torch

__all__ = ["PyTorchCallback", "ClipGradsL2Norm", "ClipGradsL2Value"]


class PyTorchCallback:
    """Override any subset of these no-op hooks; return callbacks from
    ``PyTorchTrial.build_callbacks()`` as ``{name: callback}`` (the name keys its
    saved state in checkpoints).
    """

    def on_trial_startup(self, first_batch_idx: int) -> None:
        """The trial is built (and restored, if resuming) and about to run."""

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        """Before the first batch of data-loader epoch ``epoch_idx``."""

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        """After the last batch of data-loader epoch ``epoch_idx``."""

    def on_training_workload_end(self, avg_metrics: Dict[str, Any], batch_metrics: list) -> None:
        """After each training workload, with its averaged and per-batch metrics."""

    def on_validation_start(self) -> None:
        """Before a validation."""

    def on_validation_end(self, metrics: Dict[str, Any]) -> None:
        """After a validation, with its reduced metrics (chief only)."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """After a checkpoint was written to ``checkpoint_dir`` (chief only)."""

    def on_trial_close(self) -> None:
        """The trial process is about to exit."""

    def on_before_optimizer_step(self, parameters: Iterator[Any]) -> None:
        """Deprecated: before each optimizer step (e.g. to clip gradients)."""

    def on_validation_step_start(self) -> None:
        """Deprecated alias of ``on_validation_start``."""

    def on_validation_step_end(self, metrics: Dict[str, Any]) -> None:
        """Deprecated alias of ``on_validation_end``."""

    def state_dict(self) -> Dict[str, Any]:
        """State to save in checkpoints."""
        return {}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""


class ClipGradsL2Norm(PyTorchCallback):
    """Deprecated: clip gradients to an L2 norm before each optimizer step."""

    def __init__(self, clip_value: float) -> None:
        self._clip_value = clip_value

    def on_before_optimizer_step(self, parameters: Iterator[Any]) -> None:
        torch.nn.utils.clip_grad_norm_(parameters, self._clip_value)


class ClipGradsL2Value(PyTorchCallback):
    """Deprecated: clip gradient values before each optimizer step."""

    def __init__(self, clip_value: float) -> None:
        self._clip_value = clip_value

    def on_before_optimizer_step(self, parameters: Iterator[Any]) -> None:
        torch.nn.utils.clip_grad_value_(parameters, self._clip_value)


def overrides(callback: PyTorchCallback, name: str) -> bool:
    return getattr(type(callback), name) is not getattr(PyTorchCallback, name)
