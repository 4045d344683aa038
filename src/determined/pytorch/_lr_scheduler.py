"""``LRScheduler``: a learning-rate scheduler and when the platform steps it."""

from __future__ import annotations

import enum
from typing import Any, Dict, List

__all__ = ["LRScheduler"]


class _StepMode(enum.Enum):
    STEP_EVERY_EPOCH = 1
    STEP_EVERY_BATCH = 2
    MANUAL_STEP = 3


class LRScheduler:
    """Wrap a ``torch.optim.lr_scheduler`` scheduler; its state is checkpointed.

    Args:
        scheduler: the torch scheduler.
        step_mode: ``STEP_EVERY_EPOCH`` (after the last batch of each data-loader
            epoch), ``STEP_EVERY_BATCH`` (after every batch) or ``MANUAL_STEP``
            (the trial calls ``step()`` itself).

    Example:
        >>> sched = det.pytorch.LRScheduler(                          # doctest: +SKIP
        ...     torch.optim.lr_scheduler.StepLR(opt, step_size=10),
        ...     step_mode=det.pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH)
    """

    StepMode = _StepMode

    def __init__(self, scheduler: Any, step_mode: _StepMode):
        if not isinstance(step_mode, _StepMode):
            raise TypeError(
                "Expected step_mode to be a det.pytorch.LRScheduler.StepMode. "
                f"Received: step_mode={step_mode!r}"
            )
        if not hasattr(scheduler, "step") or not hasattr(scheduler, "state_dict"):
            raise TypeError(
                f"Expected a torch learning-rate scheduler. Received: scheduler={scheduler!r}"
            )
        self._scheduler = scheduler
        self._step_mode = step_mode

    @property
    def scheduler(self) -> Any:
        return self._scheduler

    @property
    def step_mode(self) -> _StepMode:
        return self._step_mode

    def get_lr(self) -> List[float]:
        """The current learning rates (legacy name of ``get_last_lr``)."""
        return self.get_last_lr()

    def get_last_lr(self) -> List[float]:
        return list(self._scheduler.get_last_lr())

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def state_dict(self) -> Dict[str, Any]:
        return self._scheduler.state_dict()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._scheduler.load_state_dict(state_dict)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scheduler, name)
