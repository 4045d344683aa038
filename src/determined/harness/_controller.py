"""The interface between the trial runner and a framework.

A controller owns the user's trial object and answers four requests: train N
batches, compute validation metrics, save a checkpoint, load one. It never sees
searcher operations, lengths or hosts; the runner (``_runner``) owns those.
"""

from __future__ import annotations

import abc
from typing import Any, Dict, Type

from determined.harness._env import TrialEnv

__all__ = ["TrialController"]


class TrialController(abc.ABC):
    """One framework's way of running a trial class.

    Args:
        trial_class: the user's Trial subclass (already loaded).
        env: the trial's environment.
    """

    framework: str = ""
    checkpoint_format: str = ""
    #: ``train`` returns plain JSON values (what ``util.plain_values`` gives), so the
    #: runner need not convert them.
    plain_training_metrics: bool = False

    def __init__(self, trial_class: Type[Any], env: TrialEnv):
        self.trial_class = trial_class
        self.env = env

    @property
    @abc.abstractmethod
    def context(self) -> Any:
        """The user-visible trial context."""

    @abc.abstractmethod
    def train(self, num_batches: int, batches_trained: int) -> Dict[str, Any]:
        """Train ``num_batches`` batches, the trial having trained ``batches_trained``.

        Returns ``{"batch_metrics": [...], "avg_metrics": {...}, "num_inputs": n}``.
        """

    @abc.abstractmethod
    def validate(self, batches_trained: int) -> Dict[str, Any]:
        """Return ``{"validation_metrics": {...}, "num_inputs": n}``."""

    @abc.abstractmethod
    def save(self, path: str, batches_trained: int) -> None:
        """Write the trial's full state (weights, optimizers, RNGs, data position) to ``path``."""

    @abc.abstractmethod
    def load(self, path: str, weights_only: bool = False) -> int:
        """Restore state from ``path``; return the batches trained it records.

        ``weights_only`` (warm starts): restore weights, optimizer and RNG states (the
        source's random streams go on, as in 0.13) but not the data position; the trial
        starts at batch 0.
        """

    def on_checkpoint_end(self, path: str) -> None:
        """Run user hooks after a checkpoint was stored."""

    def on_validation_end(self, metrics: Dict[str, Any]) -> None:
        """Run user hooks after a validation (chief only)."""

    def close(self) -> None:
        """Release resources (user ``on_trial_close`` hooks, data loader workers)."""
