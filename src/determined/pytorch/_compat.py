"""Upstream 0.13 names of ``determined.pytorch`` kept for user code:
``PyTorchTrialController`` and ``reset_parameters``."""

from __future__ import annotations

from typing import Any

import torch

from determined._framework_controller import FrameworkTrialController, build

__all__ = ["PyTorchTrialController", "reset_parameters"]


def reset_parameters(model: torch.nn.Module) -> None:
    """Re-initialize every submodule of ``model`` that has ``reset_parameters()``."""
    for module in model.modules():
        reset = getattr(module, "reset_parameters", None)
        if callable(reset):
            reset()


class PyTorchTrialController(FrameworkTrialController):
    """Upstream's controller of ``PyTorchTrial``s (see ``determined._framework_controller``)."""

    _internal = "determined.pytorch._controller:PyTorchTrialController"

    def __init__(self, trial_inst: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._setup(trial_inst)

    @staticmethod
    def from_trial(*args: Any, **kwargs: Any) -> "PyTorchTrialController":
        return PyTorchTrialController(*args, **kwargs)

    @staticmethod
    def from_native(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("PyTorchTrial has no Native API in 0.13")

    @staticmethod
    def pre_execute_hook(env: Any, hvd_config: Any) -> None:
        FrameworkTrialController.pre_execute_hook(env, hvd_config)
        torch.manual_seed(env.trial_seed)

    @staticmethod
    def support_determined_native() -> bool:
        return False

    @staticmethod
    def supports_multi_gpu_training() -> bool:
        return True

    @staticmethod
    def supports_mixed_precision() -> bool:
        return True

    @staticmethod
    def supports_averaging_training_metrics() -> bool:
        return True

    def run(self) -> None:
        super().run()

    def get_epoch_idx(self, batch_id: int) -> int:
        """The epoch that training batch ``batch_id`` belongs to."""
        per_epoch = int(getattr(self._impl, "_epoch_len", 0) or 0)
        return batch_id // per_epoch if per_epoch else 0


_ = build  # shared constructor helper for the other frameworks
